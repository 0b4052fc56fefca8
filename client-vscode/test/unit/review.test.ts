import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { TOOL_CONFIG } from '../../src/config';
import { ACCEPT, REJECT, SHOW_TREE, SearchReviews, parseSearchDocUri, searchDocUri } from '../../src/review';
import { TabInputTextDiff, Uri, fake } from './fake/vscode';
import { BEST, FILE, ORIGINAL, payload } from './fixtures';
import { summarize } from '../../src/searchResult';


async function settle(): Promise<void> {
    for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setImmediate(resolve));
    }
}

function setup(applied = true) {
    const calls: { command: string; args: unknown[] }[] = [];
    const trees: string[] = [];
    const reviews = new SearchReviews(
        (command, ...args) => {
            calls.push({ command, args });
            return Promise.resolve(applied);
        },
        (id) => trees.push(id),
    );
    return { reviews, calls, trees };
}

describe('search review (diff flow)', () => {
    beforeEach(() => fake.reset());

    it('opens the current file against the best variant, served from a tritonsmith-search: document', async () => {
        const { reviews } = setup();
        fake.messageAnswers.push(undefined); // the notification is dismissed
        await reviews.receive(payload());
        const diff = fake.executed.find((call) => call.command === 'vscode.diff');
        assert.ok(diff, 'vscode.diff was executed');
        const [left, right, title] = diff.args as [Uri, Uri, string];
        assert.equal(left.toString(), FILE, 'the current file on the left');
        assert.equal(right.scheme, TOOL_CONFIG.searchScheme);
        assert.ok(right.toString().endsWith('/best/slow_add.py'), right.toString());
        assert.match(title, /add_kernel: current ↔ faster \(3\.50× \(95% CI 3\.20–3\.80×, noise floor 2%\) faster \(interpreter time\)/);
        assert.equal(reviews.provideTextDocumentContent(right as never), BEST);
        assert.equal(
            reviews.provideTextDocumentContent(searchDocUri({ searchId: 'ts-20260101-000000-abcdef', uri: FILE }, 'original') as never),
            ORIGINAL,
        );
        const message = fake.messages.at(-1);
        assert.deepEqual(message?.items, [ACCEPT, REJECT, SHOW_TREE]);
        assert.match(message?.text ?? '', /add_kernel: 3\.50× \(95% CI 3\.20–3\.80×, noise floor 2%\) faster \(interpreter time\), 2 candidates/);
        assert.equal(reviews.isPending('ts-20260101-000000-abcdef'), true);
    });

    it('accept calls tritonsmith.server.applySearchResult(searchId) and closes the diff once applied', async () => {
        const { reviews, calls } = setup(true);
        fake.messageAnswers.push(ACCEPT);
        const id = 'ts-20260101-000000-abcdef';
        const tab = { input: new TabInputTextDiff(Uri.parse(FILE), searchDocUri({ searchId: id, uri: FILE }, 'best') as never) };
        fake.tabs.push(tab, { input: 'another editor' });
        await reviews.receive(payload());
        await settle();
        assert.deepEqual(calls, [{ command: TOOL_CONFIG.serverCommands.applySearchResult, args: [id] }]);
        assert.ok(!TOOL_CONFIG.commands.acceptSearchResult.startsWith(TOOL_CONFIG.serverCommandPrefix));
        assert.deepEqual(fake.closedTabs, [tab]);
        assert.equal(reviews.isPending(id), false);
        assert.equal(reviews.results().length, 1, 'kept for the search view');
        assert.match(reviews.outcome(id) ?? '', /^applied \d+\.\d\d× at \d\d:\d\d$/);
    });

    it('keeps the result pending when the server did not apply it (buffer changed, dismissed)', async () => {
        const { reviews, calls } = setup(false);
        fake.messageAnswers.push(undefined);
        await reviews.receive(payload());
        assert.equal(await reviews.accept(), false, 'no argument: the latest pending result');
        assert.equal(calls.length, 1);
        assert.equal(reviews.isPending('ts-20260101-000000-abcdef'), true);
        assert.deepEqual(fake.closedTabs, []);
    });

    it('reject applies nothing; editor-title actions pass the virtual document URI', async () => {
        const { reviews, calls } = setup();
        fake.messageAnswers.push(undefined, undefined);
        await reviews.receive(payload());
        await reviews.receive(payload({ searchId: 'ts-2', kernel: 'other' }));
        const uri = searchDocUri({ searchId: 'ts-20260101-000000-abcdef', uri: FILE }, 'best');
        assert.deepEqual(parseSearchDocUri(uri), { searchId: 'ts-20260101-000000-abcdef', side: 'best' });
        assert.equal(reviews.resolveId(uri), 'ts-20260101-000000-abcdef');
        const decided: string[] = [];
        reviews.onDidDecide((result) => decided.push(result.kernel));
        await reviews.reject(uri);
        assert.equal(calls.length, 0);
        assert.match(reviews.outcome('ts-20260101-000000-abcdef') ?? '', /^rejected at \d\d:\d\d$/);
        assert.equal(reviews.outcome('ts-2'), undefined);
        assert.equal(decided.length, 1, 'the status bar is told once');
        assert.equal(reviews.isPending('ts-20260101-000000-abcdef'), false);
        assert.equal(reviews.isPending('ts-2'), true);
    });

    it('deciding elsewhere hides the question; a late answer to it applies nothing and says what was done', async () => {
        const { reviews, calls } = setup(true);
        let answer: (value: string | undefined) => void = () => undefined;
        const pendingAnswer = new Promise<string | undefined>((resolve) => (answer = resolve));
        const window = (await import('./fake/vscode')).window;
        const show = window.showInformationMessage;
        const later: string[] = [];
        window.showInformationMessage = (text: string) => {
            later.push(text);
            return later.length === 1 ? pendingAnswer : Promise.resolve(undefined);
        };
        try {
            const received = reviews.receive(payload());
            await settle();
            assert.equal(await reviews.accept('ts-20260101-000000-abcdef'), true);
            assert.ok(fake.executed.some((c) => c.command === 'notifications.hideToasts'), 'the open question is hidden');
            answer(ACCEPT);
            await received;
            assert.equal(calls.length, 1, 'applied once');
            assert.match(later.at(-1) ?? '', /add_kernel: already applied \d+\.\d\d× at \d\d:\d\d\.$/);
        } finally {
            window.showInformationMessage = show;
        }
    });

    it('answering the question itself hides no other notification', async () => {
        const { reviews } = setup(true);
        fake.messageAnswers.push(ACCEPT);
        await reviews.receive(payload());
        await settle();
        assert.equal(reviews.isPending('ts-20260101-000000-abcdef'), false);
        assert.ok(!fake.executed.some((c) => c.command === 'notifications.hideToasts'));
    });

    it('"Show search tree" opens the view on that search; a malformed notification is ignored', async () => {
        const { reviews, trees } = setup();
        fake.messageAnswers.push(SHOW_TREE);
        await reviews.receive(payload());
        assert.deepEqual(trees, ['ts-20260101-000000-abcdef']);
        await reviews.receive({ searchId: 3 });
        assert.equal(reviews.results().length, 1);
        assert.match(reviews.provideTextDocumentContent(Uri.parse('tritonsmith-search:/gone/best/x.py') as never), /no longer kept/);
    });
});

describe('search review: live trees, node diffs, past searches', () => {
    beforeEach(() => fake.reset());

    const step = (id: number, parent: number | null, outcome: string, speedup: number | null, n = id) => ({
        searchId: 'ts-live',
        journalId: 's-1',
        uri: FILE,
        kernel: 'add_kernel',
        step: n,
        steps: 3,
        node: { id, parent, kind: id === 0 ? 'root' : 'refine', outcome, speedup },
    });

    it('grows a running search node by node, then keeps a result without improvement (no diff, nothing pending)', async () => {
        const { reviews } = setup();
        const fired: string[] = [];
        reviews.onDidChangeResult((id) => fired.push(id));
        reviews.progress(step(0, null, 'correct', 1));
        reviews.progress(step(1, 0, 'correct', 0.8));
        reviews.progress({ nonsense: true });
        const live = reviews.get('ts-live');
        assert.ok(live?.live);
        assert.deepEqual(live.tree.map((n) => n.id), [0, 1]);
        assert.equal(live.bestId, 1);
        assert.match(summarize(live), /running, step 1\/3/);
        assert.deepEqual(fired, ['ts-live', 'ts-live']);
        await reviews.receive(payload({ searchId: 'ts-live', improved: false, best: '', bestId: null, speedup: null, edit: null, confirmation: null, result: '' }));
        const done = reviews.get('ts-live');
        assert.ok(done && !done.live && !done.improved);
        assert.equal(reviews.isPending('ts-live'), false);
        assert.equal(fake.executed.filter((c) => c.command === 'vscode.diff').length, 0, 'nothing to review');
        assert.equal(fake.messages.length, 0);
        assert.match(summarize(done), /no faster verified variant \(no correct candidate/);
        reviews.progress(step(2, 1, 'wrong', null));
        assert.equal(reviews.get('ts-live')?.live, undefined, 'a late progress does not undo the result');
    });

    it("fetches a node's source through tritonsmith.server.searchNode and diffs it against the original", async () => {
        const { reviews, calls } = setup();
        fake.messageAnswers.push(undefined);
        await reviews.receive(payload());
        const result = reviews.get('ts-20260101-000000-abcdef');
        assert.ok(result);
        const execute = (command: string, ...args: unknown[]) => {
            calls.push({ command, args });
            return Promise.resolve(command === TOOL_CONFIG.serverCommands.searchNode ? { source: 'NODE 1\n', kind: 'refine' } : undefined);
        };
        const fetching = new SearchReviews(execute, () => undefined);
        fake.messageAnswers.push(undefined);
        await fetching.receive(payload());
        fake.executed.length = 0;
        assert.equal(await fetching.openNode(result, 1), true);
        assert.deepEqual(calls.at(-1), { command: TOOL_CONFIG.serverCommands.searchNode, args: ['j-1', 1] });
        const [diff] = fake.executed.filter((c) => c.command === 'vscode.diff');
        assert.ok(diff);
        const [left, right, title] = diff.args as [Uri, Uri, string];
        assert.ok(left.toString().endsWith('/original/slow_add.py'));
        assert.ok(right.toString().endsWith('/node-1/slow_add.py'));
        assert.deepEqual(parseSearchDocUri(right), { searchId: 'ts-20260101-000000-abcdef', side: 'node-1' });
        assert.equal(fetching.provideTextDocumentContent(right as never), 'NODE 1\n');
        assert.equal(fetching.provideTextDocumentContent(left as never), ORIGINAL);
        assert.match(title, /original ↔ #1/);
        const count = calls.length;
        await fetching.openNode(result, 1);
        assert.equal(calls.length, count, 'fetched once');
        await fetching.openNode(result, 2);
        assert.equal(calls.length, count, 'the best one is in the result already');
        assert.equal(await fetching.openNode({ ...result, journalId: null }, 1 + 5), false);
    });

    it('lists past searches from the journal and reads one back with searchTree', async () => {
        const calls: unknown[][] = [];
        const reviews = new SearchReviews((command, ...args) => {
            calls.push([command, ...args]);
            if (command === TOOL_CONFIG.serverCommands.listSearches) {
                return Promise.resolve([{ id: 's-old', uri: FILE, kernel: 'add_kernel', status: 'budget', started: 1, nodes: 4, bestSpeedup: 2 }, { bad: 1 }]);
            }
            return Promise.resolve(payload({ searchId: 's-old', journalId: 's-old', edit: null }));
        }, () => undefined);
        const past = await reviews.listPast();
        assert.deepEqual(past.map((p) => [p.id, p.nodes, p.bestSpeedup]), [['s-old', 4, 2]]);
        assert.equal(await reviews.openPast('s-old'), 's-old');
        assert.deepEqual(calls.at(-1), [TOOL_CONFIG.serverCommands.searchTree, 's-old']);
        assert.equal(reviews.isPending('s-old'), false);
        assert.equal(await reviews.openPast('s-old'), 's-old');
        assert.equal(calls.length, 2, 'read once');
    });
});

describe('search review (what a step changed)', () => {
    beforeEach(() => fake.reset());

    it("asks the journal once for a node's diff against its parent, and tolerates a journal without it", async () => {
        const calls: unknown[][] = [];
        const reviews = new SearchReviews((command, ...args) => {
            calls.push([command, ...args]);
            const id = args[1];
            return Promise.resolve(id === 2 ? { source: 'x', diffAgainst: 0, diff: '@@ -1 +1 @@\n-a\n+b' } : { source: 'y' });
        }, () => undefined);
        fake.messageAnswers.push(undefined);
        await reviews.receive(payload());
        const [result] = reviews.results();
        assert.ok(result);
        assert.deepEqual(await reviews.nodeChange(result, 2), { against: 0, diff: '@@ -1 +1 @@\n-a\n+b' });
        assert.deepEqual(await reviews.nodeChange(result, 2), { against: 0, diff: '@@ -1 +1 @@\n-a\n+b' });
        assert.equal(await reviews.nodeChange(result, 1), undefined);
        assert.deepEqual(calls.map((call) => call[2]), [2, 1], 'each node asked once');
        assert.ok(calls.every((call) => call[0] === TOOL_CONFIG.serverCommands.searchNode));
    });
});
