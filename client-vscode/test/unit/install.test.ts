import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
    checkInstalled,
    coreOffer,
    decide,
    ensureInstalled,
    evalOffer,
    explainPipFailure,
    findBundledWheel,
    type InstallUi,
    type Offer,
    type PipCommand,
    type RunResult,
    type Runner,
} from '../../src/install';

const WHEEL = '/ext/bundled/tritonsmith-0.1.0-py3-none-any.whl';

function runnerReturning(result: RunResult, calls: string[][] = []): Runner {
    return (command, args) => {
        calls.push([command, ...args]);
        return Promise.resolve(result);
    };
}

/** An InstallUi that answers offers from `answers` (by kind) and records everything. */
function scriptedUi(answers: Partial<Record<Offer['kind'], boolean>>, pipResult: RunResult = { code: 0, stdout: '', stderr: '' }) {
    const asked: Offer[] = [];
    const ran: PipCommand[] = [];
    const errors: string[] = [];
    const ui: InstallUi = {
        ask: (offer) => {
            asked.push(offer);
            return Promise.resolve(answers[offer.kind] ?? false);
        },
        run: (command) => {
            ran.push(command);
            return Promise.resolve(pipResult);
        },
        error: (message) => errors.push(message),
        info: () => undefined,
    };
    return { ui, asked, ran, errors };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('checkInstalled', () => {
    it('runs `python -c "import tritonsmith"` and reads the version', async () => {
        const calls: string[][] = [];
        const state = await checkInstalled('/py', undefined, runnerReturning({ code: 0, stdout: '0.1.0\n', stderr: '' }, calls));
        assert.deepEqual(state, { kind: 'installed', version: '0.1.0' });
        assert.equal(calls[0]?.[0], '/py');
        assert.equal(calls[0]?.[1], '-c');
        assert.match(calls[0]?.[2] ?? '', /^import tritonsmith;/);
    });

    it('reads whether PyTorch and Triton are there too (lint only without them)', async () => {
        const without = await checkInstalled('/py', undefined, runnerReturning({ code: 0, stdout: '0.1.0\n0\n', stderr: '' }, []));
        assert.deepEqual(without, { kind: 'installed', version: '0.1.0', evalReady: false });
        const withEval = await checkInstalled('/py', undefined, runnerReturning({ code: 0, stdout: '0.1.0\n1\n', stderr: '' }, []));
        assert.deepEqual(withEval, { kind: 'installed', version: '0.1.0', evalReady: true });
    });

    it('tells a missing module from a missing interpreter', async () => {
        const missing = await checkInstalled(
            '/py',
            undefined,
            runnerReturning({ code: 1, stdout: '', stderr: "Traceback...\nModuleNotFoundError: No module named 'tritonsmith'\n" }),
        );
        assert.deepEqual(missing, { kind: 'missing', detail: "ModuleNotFoundError: No module named 'tritonsmith'" });
        const noPython = await checkInstalled(
            '/nope',
            undefined,
            runnerReturning({ code: null, stdout: '', stderr: '', error: { code: 'ENOENT', message: 'spawn /nope ENOENT' } }),
        );
        assert.equal(noPython.kind, 'no-python');
    });

    it('reports a missing interpreter through the real runner', async () => {
        const state = await checkInstalled('/nonexistent/bin/python3');
        assert.equal(state.kind, 'no-python');
    });
});

describe('install decisions', () => {
    it('offers nothing when tritonsmith is installed', () => {
        assert.deepEqual(decide({ kind: 'installed', version: '0.1.0' }, '/py', WHEEL), {});
    });

    it('offers the bundled wheel when it is missing: the core only, never torch or triton', () => {
        const { offer } = decide({ kind: 'missing', detail: 'No module' }, '/py', WHEEL);
        assert.equal(offer?.kind, 'core');
        assert.deepEqual(offer.command, { command: '/py', args: ['-m', 'pip', 'install', '--upgrade', WHEEL] });
        const commandLine = [offer.command.command, ...offer.command.args].join(' ');
        assert.doesNotMatch(commandLine, /torch|triton\b|\[eval\]|\[/);
        assert.match(offer.message, /no PyTorch, no Triton/);
    });

    it('installs from PyPI when no wheel is bundled (a development checkout)', () => {
        assert.deepEqual(coreOffer('/py', undefined).command.args, ['-m', 'pip', 'install', '--upgrade', 'tritonsmith']);
    });

    it('makes [eval] a separate offer that says it is gigabytes', () => {
        const offer = evalOffer('/py', WHEEL);
        assert.equal(offer.kind, 'eval');
        assert.deepEqual(offer.command.args, ['-m', 'pip', 'install', `${WHEEL}[eval]`]);
        assert.match(offer.message, /PyTorch and Triton, several gigabytes/);
        assert.match(offer.accept, /several GB/);
    });

    it('explains a missing interpreter instead of offering pip', () => {
        const { offer, problem } = decide({ kind: 'no-python', detail: 'ENOENT' }, '/nope', WHEEL);
        assert.equal(offer, undefined);
        assert.match(problem ?? '', /tritonsmith\.interpreter/);
    });
});

describe('ensureInstalled', () => {
    it('asks first, installs the core only, then offers [eval] separately', async () => {
        const { ui, asked, ran } = scriptedUi({ core: true, eval: false });
        const ready = await ensureInstalled({ kind: 'missing', detail: '' }, '/py', WHEEL, ui);
        await settle();
        assert.equal(ready, true);
        assert.deepEqual(
            asked.map((offer) => offer.kind),
            ['core', 'eval'],
        );
        assert.equal(ran.length, 1, 'declining [eval] installs nothing more');
        assert.doesNotMatch(ran[0]?.args.join(' ') ?? '', /eval|torch/);
    });

    it('installs [eval] only when that offer is accepted too', async () => {
        const { ui, ran } = scriptedUi({ core: true, eval: true });
        let evalInstalled = false;
        await ensureInstalled({ kind: 'missing', detail: '' }, '/py', WHEEL, ui, () => (evalInstalled = true));
        await settle();
        assert.deepEqual(
            ran.map((command) => command.args.at(-1)),
            [WHEEL, `${WHEEL}[eval]`],
        );
        assert.equal(evalInstalled, true);
    });

    it('does not start the server when the user declines, and runs nothing', async () => {
        const { ui, asked, ran } = scriptedUi({ core: false });
        assert.equal(await ensureInstalled({ kind: 'missing', detail: '' }, '/py', WHEEL, ui), false);
        await settle();
        assert.equal(asked.length, 1);
        assert.equal(ran.length, 0);
    });

    it('reports a failed pip run in words, and offers no [eval] after it', async () => {
        const { ui, asked, errors } = scriptedUi(
            { core: true, eval: true },
            { code: 1, stdout: '', stderr: 'error: externally-managed-environment' },
        );
        assert.equal(await ensureInstalled({ kind: 'missing', detail: '' }, '/usr/bin/python3', WHEEL, ui), false);
        await settle();
        assert.equal(asked.length, 1);
        assert.match(errors[0] ?? '', /PEP 668/);
    });

    it('starts right away when already installed', async () => {
        const { ui, asked } = scriptedUi({});
        assert.equal(await ensureInstalled({ kind: 'installed', version: '0.1.0' }, '/py', WHEEL, ui), true);
        assert.equal(asked.length, 0);
    });
});

describe('findBundledWheel and explainPipFailure', () => {
    it('finds the wheel in bundled/, or nothing', () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritonsmith-ext-'));
        assert.equal(findBundledWheel(dir), undefined);
        fs.mkdirSync(path.join(dir, 'bundled'));
        fs.writeFileSync(path.join(dir, 'bundled', 'tritonsmith-0.1.0-py3-none-any.whl'), '');
        fs.writeFileSync(path.join(dir, 'bundled', 'other-1.0-py3-none-any.whl'), '');
        assert.equal(findBundledWheel(dir), path.join(dir, 'bundled', 'tritonsmith-0.1.0-py3-none-any.whl'));
        fs.rmSync(dir, { recursive: true });
    });

    it('names the fix for a python without pip', () => {
        assert.match(explainPipFailure({ code: 1, stdout: '', stderr: '/py: No module named pip' }, '/py'), /no pip/);
        assert.match(explainPipFailure({ code: 2, stdout: '', stderr: 'boom' }, '/py'), /exit code 2/);
    });
});
