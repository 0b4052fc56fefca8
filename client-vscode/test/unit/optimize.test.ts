import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TOOL_CONFIG } from '../../src/config';
import { findKernels, offerFromActions, startSearch } from '../../src/optimize';

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

    it("a per-search proposer is optimize's 4th argument; the settings default sends none", async () => {
        const calls: unknown[][] = [];
        const deps = {
            execute: (command: string, ...args: unknown[]) => {
                calls.push([command, ...args]);
                return Promise.resolve('ts-1');
            },
            log: () => undefined,
        };
        const offer = { uri: FILE, kernel: 'add_kernel', modes: ['auto'] };
        assert.equal(await startSearch(deps, offer, 'refine', 'offline'), 'ts-1');
        assert.deepEqual(calls, [[TOOL_CONFIG.serverCommands.optimize, FILE, 'add_kernel', 'refine', { proposer: 'offline' }]]);
        calls.length = 0;
        assert.equal(await startSearch(deps, offer, 'auto', undefined), 'ts-1');
        assert.deepEqual(calls, [[TOOL_CONFIG.serverCommands.optimize, FILE, 'add_kernel', 'auto']], 'the settings default: no options');
    });
});
