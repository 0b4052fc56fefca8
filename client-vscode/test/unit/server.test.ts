import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildClientOptions, buildMiddleware, buildServerOptions, clientLogLine, experimentalFeature, serverSettings, type ClientHooks } from '../../src/server';

const KEY = 'sk-ant-test-0123456789';
const output = { name: 'Tritonsmith' } as never;

describe('server options', () => {
    it('spawn `python -m tritonsmith serve` with the API key in the environment', () => {
        const options = buildServerOptions('/py', '/ext', KEY, { PATH: '/bin', HOME: '/home/me' });
        assert.equal(options.command, '/py');
        assert.deepEqual(options.args, ['-m', 'tritonsmith', 'serve']);
        assert.equal(options.options?.cwd, '/ext');
        assert.equal(options.options?.env?.ANTHROPIC_API_KEY, KEY);
        assert.equal(options.options?.env?.PATH, '/bin', 'the rest of the environment is kept');
        assert.ok(!options.args?.some((arg) => arg.includes(KEY)), 'never on the command line');
    });

    it('set no key variable when no key is stored, and keep one the user exported', () => {
        assert.equal(buildServerOptions('/py', '/ext', undefined, {}).options?.env?.ANTHROPIC_API_KEY, undefined);
        assert.equal(
            buildServerOptions('/py', '/ext', undefined, { ANTHROPIC_API_KEY: 'from-shell' }).options?.env?.ANTHROPIC_API_KEY,
            'from-shell',
        );
    });

    it('never put the key in the client options or initialization options', () => {
        const settings = serverSettings({ interpreter: '/py', ignore: ['TS101'], budget: 50, get: () => KEY });
        const options = buildClientOptions(output, settings);
        assert.ok(!JSON.stringify(options.initializationOptions).includes(KEY));
        assert.ok(!JSON.stringify({ ...options, outputChannel: undefined }).includes(KEY));
        assert.deepEqual(options.initializationOptions, { settings: { ignore: ['TS101'], budget: 50 } });
    });

    it('select Python files, sync the tritonsmith section and pull diagnostics on change and save', () => {
        const options = buildClientOptions(output, {});
        assert.deepEqual(options.documentSelector, [
            { scheme: 'file', language: 'python' },
            { scheme: 'untitled', language: 'python' },
        ]);
        assert.deepEqual(options.synchronize, { configurationSection: 'tritonsmith' });
        assert.deepEqual(options.diagnosticPullOptions, { onChange: true, onSave: true });
        assert.equal(options.outputChannel, output);
    });

    it('leave the client-only interpreter setting out of what the server gets', () => {
        assert.deepEqual(serverSettings({ interpreter: '/py', select: ['TS1'] }), { select: ['TS1'] });
    });
});

describe('client hooks', () => {
    it('declare capabilities.experimental.tritonsmith.searchResultSupport', () => {
        const capabilities: { experimental?: unknown } = { experimental: { other: 1 } };
        experimentalFeature.fillClientCapabilities(capabilities);
        assert.deepEqual(capabilities.experimental, { other: 1, tritonsmith: { searchResultSupport: true } });
    });

    it('route progress through the hook (no configuration rewriting: a per-search proposer is an optimize argument)', () => {
        const seen: unknown[] = [];
        const cancelled: unknown[] = [];
        const hooks: ClientHooks = {
            onSearchResult: () => undefined,
            onProgress: (token, value, cancel) => {
                seen.push([token, value.kind]);
                cancel();
                return value.kind === 'end';
            },
            onSearchProgress: () => undefined,
            onStopped: () => undefined,
        };
        const middleware = buildMiddleware(hooks, (token) => cancelled.push(token));
        assert.equal(middleware.workspace?.configuration, undefined);
        const passed: unknown[] = [];
        const next = (token: unknown, value: { kind: string }) => passed.push([token, value.kind]);
        middleware.handleWorkDoneProgress?.('t', { kind: 'begin', title: 'Optimizing k' }, next);
        middleware.handleWorkDoneProgress?.('t', { kind: 'end' }, next);
        assert.deepEqual(seen, [['t', 'begin'], ['t', 'end']]);
        assert.deepEqual(passed, [['t', 'end']]);
        assert.deepEqual(cancelled, ['t', 't']);
    });
});

describe('client log lines', () => {
    it('call a clean exit (after each restart) what it is, not an error', () => {
        assert.deepEqual(clientLogLine('error', 'Server process exited with code 0.'), {
            level: 'info',
            text: 'The server process exited normally.',
        });
    });

    it('keep a failing exit an error, without the library\'s own time prefix, with its data', () => {
        assert.deepEqual(clientLogLine('error', 'Server process exited with code 1.'), {
            level: 'error',
            text: 'Server process exited with code 1.',
        });
        assert.deepEqual(clientLogLine('warn', 'Request failed', { code: -32603 }), {
            level: 'warn',
            text: 'Request failed\n{"code":-32603}',
        });
    });
});
