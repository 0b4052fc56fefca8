import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TOOL_CONFIG } from '../../src/config';
import {
    RulesCli,
    RulesTreeProvider,
    describeLearned,
    learnedRuleMarkdown,
    parseHit,
    parseRules,
    ruleDetails,
    ruleGroups,
    ruleItemView,
    ruleOf,
    type RuleNode,
} from '../../src/rules';

const rule = (code: string, status: string, reviewed = false, extra: Record<string, unknown> = {}) => ({
    code,
    name: `rule-${code}`,
    status,
    reviewed,
    hold: null,
    statement: 'a statement',
    category: 'learned',
    severity: 'warning',
    count: 4,
    kernels: 2,
    first_seen: '2026-01-01',
    last_seen: '2026-01-02',
    failures: [1, 2],
    signatures: ['sig'],
    template: 'tpl',
    examples: ['tl.load(x)'],
    ...extra,
});

const REVIEWED = {
    provenance: 'learned offline from the failure log: 4 failures in 2 kernels',
    contradictions: ['fine.py'],
    hits: ['kernels/scan.py:12'],
};
const JSON_OUT = JSON.stringify([rule('TSL002', 'active', false, REVIEWED), rule('TSL001', 'pending'), rule('TSL003', 'rejected', true), rule('TSL004', 'active', true)]);

describe('learned rules', () => {
    it('parses `rules review --format json` and groups by lifecycle, pending first', () => {
        const rules = parseRules(JSON_OUT);
        assert.equal(rules.length, 4);
        const groups = ruleGroups(rules);
        assert.deepEqual(
            groups.map((g) => (g.type === 'group' ? [g.status, g.rules.map((r) => r.code)] : [])),
            [
                ['pending', ['TSL001']],
                ['active', ['TSL002', 'TSL004']],
                ['rejected', ['TSL003']],
            ],
        );
        assert.deepEqual(ruleGroups(parseRules('[]')), []);
        assert.throws(() => parseRules('{"not": "a list"}'));
    });

    it('tells graduated from accepted rules and offers accept/reject by state', () => {
        const [graduated, pending, rejected, accepted] = parseRules(JSON_OUT).map((r) => ruleItemView({ type: 'rule', rule: r }));
        assert.match(graduated?.description ?? '', /^graduated · 4 failures in 2 kernels/);
        assert.match(accepted?.description ?? '', /^accepted/);
        assert.equal(pending?.contextValue, 'rule.pending');
        assert.equal(rejected?.contextValue, 'rule.rejected');
        assert.match(pending?.tooltip ?? '', /signature: sig/);
        const second = parseRules(JSON_OUT)[1];
        assert.ok(second);
        const node: RuleNode = { type: 'rule', rule: second };
        assert.equal(ruleOf(node)?.code, 'TSL001');
        assert.equal(ruleOf({ type: 'group' }), undefined);
        assert.equal(ruleOf(undefined), undefined);
    });

    it('runs the command line with the server interpreter, on the workspace folder', async () => {
        const calls: { command: string; args: readonly string[]; cwd: string }[] = [];
        const cli = new RulesCli(() => Promise.resolve('/venv/bin/python'), '/ext', (command, args, cwd) => {
            calls.push({ command, args, cwd });
            const out = args.includes('induce') ? JSON.stringify([{ ...rule('TSL009', 'pending'), new: true, added: 3 }]) : JSON_OUT;
            return Promise.resolve({ code: 0, stdout: out, stderr: '' });
        });
        assert.equal((await cli.list('/ws')).length, 4);
        const learned = await cli.induce('/ws');
        assert.equal(describeLearned(learned), 'learned 1 rule: TSL009 new (pending).');
        assert.match(describeLearned([]), /nothing learned/);
        await cli.decide('/ws', 'TSL001', 'accept');
        await cli.decide('/ws', 'TSL002', 'reject');
        assert.deepEqual(
            calls.map((c) => [c.command, c.args.join(' '), c.cwd]),
            [
                ['/venv/bin/python', '-m tritonsmith rules review --all --format json /ws', '/ext'],
                ['/venv/bin/python', '-m tritonsmith adapt induce --format json /ws', '/ext'],
                ['/venv/bin/python', '-m tritonsmith rules review --accept TSL001 /ws', '/ext'],
                ['/venv/bin/python', '-m tritonsmith rules review --reject TSL002 /ws', '/ext'],
            ],
        );
        assert.ok(TOOL_CONFIG.cli.review.includes('--all'));
    });

    it('the tree view shows groups, then rules; a failing command line becomes a message', async () => {
        let fail = false;
        const cli = new RulesCli(() => Promise.resolve('py'), '/ext', () =>
            Promise.resolve(fail ? { code: 2, stdout: '', stderr: 'Traceback\nUsageError: no such folder' } : { code: 0, stdout: JSON_OUT, stderr: '' }),
        );
        const tree = new RulesTreeProvider(cli, () => '/ws');
        const top = await tree.getChildren();
        assert.equal(top.length, 3);
        const kids = await tree.getChildren(top[1]);
        assert.deepEqual(kids.map((k) => (k.type === 'rule' ? k.rule.code : '')), ['TSL002', 'TSL004']);
        const first = kids[0];
        assert.ok(first);
        assert.equal(tree.getTreeItem(first).contextValue, 'rule.active');
        // A click on a rule opens its page.
        assert.equal(tree.getTreeItem(first).command?.command, TOOL_CONFIG.commands.showLearnedRule);
        // A rule opens onto what review shows; a hit opens its line.
        const details = await tree.getChildren(first);
        assert.deepEqual(details.map((d) => (d.type === 'detail' ? d.label : '')), [
            'a statement',
            'learned offline from the failure log: 4 failures in 2 kernels',
            'failed: tl.load(x)',
            'contradicted: fine.py flagged, then compiled',
            'flags kernels/scan.py:12',
        ]);
        const hit = details[4];
        assert.ok(hit);
        const item = tree.getTreeItem(hit);
        assert.equal(item.contextValue, 'hit');
        assert.equal(item.command?.command, 'vscode.open');
        const [uri, options] = (item.command?.arguments ?? []) as [{ fsPath: string }, { selection: { start: { line: number } } }];
        assert.equal(uri.fsPath, '/ws/kernels/scan.py');
        assert.equal(options.selection.start.line, 11);
        fail = true;
        let fired = 0;
        tree.onDidChangeTreeData(() => fired++);
        tree.refresh();
        assert.equal(fired, 1);
        const after = await tree.getChildren();
        assert.equal(after[0]?.type, 'message');
        assert.match(after[0]?.type === 'message' ? after[0].text : '', /UsageError: no such folder/);
        const none = new RulesTreeProvider(cli, () => undefined);
        assert.equal((await none.getChildren())[0]?.type, 'message');
    });

    it('says a rule flags nothing here, and reads hits with colons in the path', () => {
        const [, pending] = parseRules(JSON_OUT);
        assert.ok(pending);
        assert.deepEqual(ruleDetails(pending).map((d) => d.label).slice(-1), ['flags nothing in this workspace now']);
        assert.deepEqual(parseHit('a:b/k.py:7'), { path: 'a:b/k.py', line: 7 });
        assert.equal(parseHit('no line'), undefined);
    });

    it("writes a learned rule's page from what review printed", () => {
        const [graduated] = parseRules(JSON_OUT);
        assert.ok(graduated);
        const page = learnedRuleMarkdown(graduated);
        assert.match(page, /^# TSL002 `rule-TSL002`\n\n\*\*a statement\*\*/);
        assert.match(page, /- Status: graduated, not reviewed yet, warning/);
        assert.match(page, /- Provenance: learned offline from the failure log: 4 failures in 2 kernels/);
        assert.match(page, /- Contradicted \(flagged, then compiled\): fine\.py/);
        assert.match(page, /## Where it flags this workspace now\n\n- `kernels\/scan\.py:12`/);
        assert.match(page, /```\ntl\.load\(x\)\n```/);
    });
});
