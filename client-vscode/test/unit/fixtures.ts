/** A `tritonsmith/searchResult` payload as the server sends it (docs/lsp-extensions.md). */
export const FILE = 'file:///ws/slow_add.py';
export const ORIGINAL = 'add_kernel[grid](x, y, out, n, BLOCK_SIZE=16)\n';
export const BEST = 'add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)\n';

export function payload(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return {
        uri: FILE,
        kernel: 'add_kernel',
        searchId: 'ts-20260101-000000-abcdef',
        journalId: 'j-1',
        mode: 'auto',
        original: ORIGINAL,
        best: BEST,
        bestId: 2,
        speedup: 3.5,
        spread: [3.2, 3.8],
        confirmation: {
            speedup: 3.5, low: 3.2, high: 3.8, noiseFloor: 0.02, rounds: 8, claimed: true,
            text: '3.50× (95% CI 3.20–3.80×, noise floor 2%)',
        },
        result: '3.50× (95% CI 3.20–3.80×, noise floor 2%)',
        screeningSpeedup: 3.6,
        measuredOn: 'interpreter',
        stopped: 'budget',
        costUsd: 0,
        diff: '--- a/slow_add.py\n+++ b/slow_add.py\n',
        tree: [
            { id: 0, parent: null, kind: 'root', outcome: 'correct', speedup: 1, message: '' },
            { id: 1, parent: 0, kind: 'refine', outcome: 'wrong', speedup: null, message: 'mismatch' },
            { id: 2, parent: 0, kind: 'refine', outcome: 'correct', speedup: 3.6, message: '', sameAs: null },
        ],
        edit: {},
        ...overrides,
    };
}
