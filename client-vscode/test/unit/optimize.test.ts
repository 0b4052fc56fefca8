import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TOOL_CONFIG } from '../../src/config';
import { SettingsOverride, findKernels, offerFromActions, startSearch } from '../../src/optimize';

const FILE = 'file:///ws/slow_add.py';

describe('optimize', () => {
    it("folds the server's optimize code actions into one offer", () => {
        const actions = ['auto', 'refine', 'regenerate'].map((mode) => ({
            title: 'Optimize this kernel',
            kind: { value: TOOL_CONFIG.optimizeActionKind },
            command: { command: TOOL_CONFIG.serverCommands.optimize, arguments: [FILE, 'add_kernel', mode] },
        }));
        assert.deepEqual(offerFromActions(actions), { uri: FILE, kernel: 'add_kernel', modes: ['auto', 'refine', 'regenerate'] });
        assert.deepEqual(offerFromActions([{ title: 'Optimize this kernel', disabled: { reason: 'add a verification harness first: x' } }]), {
            uri: '',
            kernel: '',
            modes: [],
            disabled: 'add a verification harness first: x',
        });
        const cancel = offerFromActions([
            { title: 'Cancel the search on add_kernel', command: { command: TOOL_CONFIG.serverCommands.cancelSearch, arguments: ['ts-1'] } },
        ]);
        assert.equal(cancel?.cancelSearchId, 'ts-1');
        assert.equal(cancel?.kernel, 'add_kernel');
        assert.equal(offerFromActions([]), undefined);
        assert.equal(offerFromActions(undefined), undefined);
    });

    it('finds @triton.jit kernels and their def lines', () => {
        const text = [
            'import triton',
            '@triton.jit',
            'def add_kernel(x):',
            '    pass',
            '@triton.jit(do_not_specialize=["n"])',
            '# a comment',
            'def other(x):',
            '    pass',
            'def helper():',
            '    pass',
            '@jit',
            'x = 1',
            'def not_a_kernel():',
            '    pass',
        ].join('\n');
        assert.deepEqual(findKernels(text), [
            { name: 'add_kernel', line: 2 },
            { name: 'other', line: 6 },
        ]);
    });

    it('overrides the proposer in configuration answers only while set, and reports pulls', async () => {
        const overrides = new SettingsOverride();
        assert.deepEqual(overrides.apply({ proposer: 'auto', budget: 3 }), { proposer: 'auto', budget: 3 });
        overrides.set({ proposer: 'offline' });
        const pulled = overrides.nextPull(1000);
        assert.deepEqual(overrides.apply({ proposer: 'auto', budget: 3 }), { proposer: 'offline', budget: 3 });
        assert.equal(await pulled, true);
        assert.equal(await overrides.nextPull(10), false);
        overrides.set(undefined);
        assert.deepEqual(overrides.apply({ proposer: 'auto' }), { proposer: 'auto' });
    });

    it('a per-search proposer: override, settings changed, pulled, optimize, then back to the settings', async () => {
        const overrides = new SettingsOverride();
        const events: string[] = [];
        const deps = {
            overrides,
            settingsChanged: () => {
                events.push(`changed(${overrides.active ? 'override' : 'settings'})`);
                // The server pulls its settings on didChangeConfiguration.
                setTimeout(() => events.push(`pulled ${JSON.stringify(overrides.apply({ proposer: 'auto' }))}`), 5);
            },
            execute: (command: string, ...args: unknown[]) => {
                events.push(`${command}(${args.join(', ')})`);
                return Promise.resolve('ts-1');
            },
            log: () => undefined,
            codeActions: () => Promise.resolve([]),
        };
        const offer = { uri: FILE, kernel: 'add_kernel', modes: ['auto'] };
        assert.equal(await startSearch(deps, offer, 'refine', 'offline'), 'ts-1');
        assert.deepEqual(events.slice(0, 3), [
            'changed(override)',
            'pulled {"proposer":"offline"}',
            `tritonsmith.server.optimize(${FILE}, add_kernel, refine)`,
        ]);
        assert.equal(events[3], 'changed(settings)');
        assert.equal(overrides.active, false);
        events.length = 0;
        assert.equal(await startSearch(deps, offer, 'auto', undefined), 'ts-1');
        assert.deepEqual(events, [`tritonsmith.server.optimize(${FILE}, add_kernel, auto)`], 'the settings default: no override');
    });
});
