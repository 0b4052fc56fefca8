/**
 * Learned rules: "Tritonsmith: Learn rules now" (`tritonsmith adapt induce --format json`) and
 * the "Learned rules" tree view (`tritonsmith rules review --all --format json`), grouped by
 * lifecycle, with Accept and Reject on a rule (`rules review --accept/--reject CODE`). A rule
 * opens onto what review shows of it: its statement, provenance, failing examples, the kernels
 * that contradicted it, and where its matcher fires in the workspace now (a click opens the
 * line). The
 * command line runs with the server's interpreter, from the extension's folder (so that a
 * workspace folder named `tritonsmith` cannot shadow the package), on the workspace folder given
 * as its PATH argument.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';

export type RuleStatus = 'pending' | 'active' | 'rejected';

/** A learned rule as `rules review --format json` prints it (the fields this view reads). */
export interface LearnedRule {
    readonly code: string;
    readonly name: string;
    readonly status: RuleStatus;
    readonly reviewed: boolean;
    readonly hold: string | null;
    readonly statement: string;
    readonly severity: string;
    readonly count: number;
    readonly kernels: number;
    readonly firstSeen: string | null;
    readonly lastSeen: string | null;
    readonly signatures: readonly string[];
    readonly examples: readonly string[];
    /** Where the rule came from ("learned offline from the failure log: 4 failures in 4 kernels"). */
    readonly provenance: string;
    /** Files it flagged that then compiled (each demoted it; two retract its matcher). */
    readonly contradictions: readonly string[];
    /** Where its matcher fires in the workspace now, as `relative/path.py:line`. */
    readonly hits: readonly string[];
    /** Only from `adapt induce`: learned now, and how many failures were added. */
    readonly isNew?: boolean;
    readonly added?: number;
}

export interface CliResult {
    readonly code: number | null;
    readonly stdout: string;
    readonly stderr: string;
}

export type CliRunner = (command: string, args: readonly string[], cwd: string) => Promise<CliResult>;

export const cliRunner: CliRunner = (command, args, cwd) =>
    new Promise((resolve) => {
        execFile(command, [...args], { cwd, timeout: TOOL_CONFIG.cli.timeoutMs, windowsHide: true, maxBuffer: 16 << 20 },
            (error, stdout, stderr) => {
                const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
                resolve({ code, stdout, stderr: stderr || (error ? error.message : '') });
            });
    });

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** The JSON list the command line prints; throws on anything else. */
export function parseRules(stdout: string): LearnedRule[] {
    const value: unknown = JSON.parse(stdout);
    if (!Array.isArray(value)) {
        throw new Error('expected a JSON list of rules');
    }
    return value.flatMap((raw: unknown): LearnedRule[] => {
        if (typeof raw !== 'object' || raw === null) {
            return [];
        }
        const r = raw as Record<string, unknown>;
        if (typeof r.code !== 'string') {
            return [];
        }
        const status: RuleStatus = r.status === 'active' || r.status === 'rejected' ? r.status : 'pending';
        return [{
            code: r.code,
            name: typeof r.name === 'string' ? r.name : r.code,
            status,
            reviewed: r.reviewed === true,
            hold: typeof r.hold === 'string' ? r.hold : null,
            statement: typeof r.statement === 'string' ? r.statement : '',
            severity: typeof r.severity === 'string' ? r.severity : '',
            count: typeof r.count === 'number' ? r.count : 0,
            kernels: typeof r.kernels === 'number' ? r.kernels : 0,
            firstSeen: typeof r.first_seen === 'string' ? r.first_seen : null,
            lastSeen: typeof r.last_seen === 'string' ? r.last_seen : null,
            signatures: strings(r.signatures),
            examples: strings(r.examples),
            provenance: typeof r.provenance === 'string' ? r.provenance : '',
            contradictions: strings(r.contradictions),
            hits: strings(r.hits),
            ...(typeof r.new === 'boolean' ? { isNew: r.new } : {}),
            ...(typeof r.added === 'number' ? { added: r.added } : {}),
        }];
    });
}

/** The command line of learned rules for one workspace folder. */
export class RulesCli {
    constructor(
        private readonly python: () => Promise<string>,
        private readonly cwd: string,
        private readonly run: CliRunner = cliRunner,
    ) {}

    private async call(args: readonly string[]): Promise<string> {
        const python = await this.python();
        const result = await this.run(python, args, this.cwd);
        if (result.code !== 0) {
            const why = result.stderr.trim().split('\n').pop() ?? '';
            throw new Error(why || `${python} ${args.join(' ')} exited with ${String(result.code)}`);
        }
        return result.stdout;
    }

    async list(folder: string): Promise<LearnedRule[]> {
        return parseRules(await this.call([...TOOL_CONFIG.cli.review, folder]));
    }

    async induce(folder: string): Promise<LearnedRule[]> {
        return parseRules(await this.call([...TOOL_CONFIG.cli.induce, folder]));
    }

    async decide(folder: string, code: string, decision: 'accept' | 'reject'): Promise<void> {
        await this.call([...(decision === 'accept' ? TOOL_CONFIG.cli.accept : TOOL_CONFIG.cli.reject), code, folder]);
    }
}

/** One line about what induction learned. */
export function describeLearned(rules: readonly LearnedRule[]): string {
    if (!rules.length) {
        return 'nothing learned: no failure in the log recurs often enough yet.';
    }
    const parts = rules.map((r) => `${r.code} ${r.isNew === false ? 'updated' : 'new'} (${r.status})`);
    return `learned ${rules.length} rule${rules.length === 1 ? '' : 's'}: ${parts.join(', ')}.`;
}

/** A line under a rule; `location` (workspace-relative path, 1-based line) makes it open that line. */
export interface RuleDetail {
    readonly type: 'detail';
    readonly label: string;
    readonly tooltip: string;
    readonly icon: string;
    readonly location?: { readonly path: string; readonly line: number };
}

export type RuleNode =
    | { readonly type: 'group'; readonly status: RuleStatus; readonly rules: readonly LearnedRule[] }
    | { readonly type: 'rule'; readonly rule: LearnedRule }
    | { readonly type: 'message'; readonly text: string }
    | RuleDetail;

/** `kernels/scan.py:12` as a path and a line; undefined when it is not one. */
export function parseHit(hit: string): { path: string; line: number } | undefined {
    const match = /^(.+):(\d+)$/.exec(hit);
    return match?.[1] && match[2] ? { path: match[1], line: Number(match[2]) } : undefined;
}

/** What a rule opens onto, in review's order: statement, provenance, examples, contradictions, hits. */
export function ruleDetails(rule: LearnedRule): RuleDetail[] {
    const out: RuleDetail[] = [{ type: 'detail', label: rule.statement, tooltip: rule.statement, icon: 'note' }];
    if (rule.provenance) {
        out.push({ type: 'detail', label: rule.provenance, tooltip: rule.provenance, icon: 'history' });
    }
    for (const example of rule.examples) {
        out.push({ type: 'detail', label: `failed: ${example.split('\n')[0] ?? ''}`, tooltip: example, icon: 'error' });
    }
    for (const where of rule.contradictions) {
        out.push({ type: 'detail', label: `contradicted: ${where} flagged, then compiled`, tooltip: where, icon: 'warning' });
    }
    if (rule.hits.length === 0 && rule.status !== 'rejected') {
        out.push({ type: 'detail', label: 'flags nothing in this workspace now', tooltip: 'No file here matches its matcher.', icon: 'check' });
    }
    for (const hit of rule.hits) {
        const location = parseHit(hit);
        out.push({ type: 'detail', label: `flags ${hit}`, tooltip: `Open ${hit}`, icon: 'location', ...(location ? { location } : {}) });
    }
    return out;
}

const GROUPS: { status: RuleStatus; label: string }[] = [
    { status: 'pending', label: 'Pending review' },
    { status: 'active', label: 'Active' },
    { status: 'rejected', label: 'Rejected' },
];

/** The view's top level: one group per lifecycle state, in review order, empty ones left out. */
export function ruleGroups(rules: readonly LearnedRule[]): RuleNode[] {
    return GROUPS.map(({ status }) => ({ type: 'group' as const, status, rules: rules.filter((r) => r.status === status) })).filter(
        (group) => group.rules.length > 0,
    );
}

export interface RuleItemView {
    readonly label: string;
    readonly description: string;
    readonly tooltip: string;
    /** `rule.pending`, `rule.active`, `rule.rejected` (menus: accept on pending and rejected, reject on pending and active). */
    readonly contextValue: string;
    readonly collapsible: boolean;
    readonly icon: string;
}

export function ruleItemView(node: RuleNode): RuleItemView {
    if (node.type === 'detail') {
        return { label: node.label, description: '', tooltip: node.tooltip, contextValue: node.location ? 'hit' : 'detail', collapsible: false, icon: node.icon };
    }
    if (node.type === 'message') {
        return { label: node.text, description: '', tooltip: node.text, contextValue: 'message', collapsible: false, icon: 'info' };
    }
    if (node.type === 'group') {
        const label = GROUPS.find((g) => g.status === node.status)?.label ?? node.status;
        return { label, description: String(node.rules.length), tooltip: label, contextValue: `group.${node.status}`, collapsible: true, icon: 'folder' };
    }
    const rule = node.rule;
    // An active rule nobody reviewed graduated by itself (enough failures in enough kernels).
    const how = rule.status === 'active' ? (rule.reviewed ? 'accepted' : 'graduated') : rule.status;
    const seen = `${rule.count} failure${rule.count === 1 ? '' : 's'} in ${rule.kernels} kernel${rule.kernels === 1 ? '' : 's'}`;
    const lines = [
        `${rule.code} ${rule.name} (${how}${rule.severity ? `, ${rule.severity}` : ''})`,
        rule.statement,
        `seen ${seen}, first ${rule.firstSeen ?? '?'}, last ${rule.lastSeen ?? '?'}`,
        ...(rule.hold ? [`held: ${rule.hold}`] : []),
        ...rule.signatures.map((s) => `signature: ${s}`),
        ...(rule.examples[0] ? [`example:\n${rule.examples[0]}`] : []),
    ];
    return {
        label: `${rule.code} ${rule.name}`,
        description: `${how} · ${seen}`,
        tooltip: lines.filter(Boolean).join('\n'),
        contextValue: `rule.${rule.status}`,
        collapsible: true,
        icon: rule.status === 'active' ? 'pass' : rule.status === 'rejected' ? 'circle-slash' : 'question',
    };
}

/** A learned rule's page, from what review printed of it (no web page can exist for it). */
export function learnedRuleMarkdown(rule: LearnedRule): string {
    const how = rule.status === 'active' ? (rule.reviewed ? 'accepted' : 'graduated, not reviewed yet') : rule.status;
    const lines = [`# ${rule.code} \`${rule.name}\``, '', `**${rule.statement}**`, '', `- Status: ${how}${rule.severity ? `, ${rule.severity}` : ''}`];
    if (rule.hold) {
        lines.push(`- Held: ${rule.hold}`);
    }
    if (rule.provenance) {
        lines.push(`- Provenance: ${rule.provenance}`);
    }
    lines.push(`- Seen ${rule.count} time${rule.count === 1 ? '' : 's'} in ${rule.kernels} kernel${rule.kernels === 1 ? '' : 's'}, first ${rule.firstSeen ?? '?'}, last ${rule.lastSeen ?? '?'}`);
    if (rule.contradictions.length) {
        lines.push(`- Contradicted (flagged, then compiled): ${rule.contradictions.join(', ')}`);
    }
    lines.push('', '## Where it flags this workspace now', '');
    lines.push(...(rule.hits.length ? rule.hits.map((hit) => `- \`${hit}\``) : ['Nowhere.']));
    if (rule.examples.length) {
        lines.push('', '## Failing examples it was learned from');
        for (const example of rule.examples) {
            lines.push('', '```', example, '```');
        }
    }
    lines.push('', `Accept or reject it from the Learned rules view, or \`tritonsmith rules review --accept ${rule.code}\`.`);
    return lines.join('\n') + '\n';
}

/** "Show learned rule": its page as a Markdown preview. */
export async function showLearnedRule(arg: unknown): Promise<void> {
    const rule = ruleOf(arg);
    if (!rule) {
        return;
    }
    const document = await vscode.workspace.openTextDocument({ language: 'markdown', content: learnedRuleMarkdown(rule) });
    await vscode.commands.executeCommand('markdown.showPreview', document.uri);
}

/** The "Learned rules" tree: the first workspace folder's learned pack. */
export class RulesTreeProvider implements vscode.TreeDataProvider<RuleNode>, vscode.Disposable {
    private readonly changed = new vscode.EventEmitter<RuleNode | undefined>();
    readonly onDidChangeTreeData = this.changed.event;
    private rules: Promise<RuleNode[]> | undefined;

    constructor(
        private readonly cli: RulesCli,
        private readonly folder: () => string | undefined,
        private readonly log: (line: string) => void = () => undefined,
    ) {}

    refresh(): void {
        this.rules = undefined;
        this.changed.fire(undefined);
    }

    getTreeItem(node: RuleNode): vscode.TreeItem {
        const view = ruleItemView(node);
        // Groups open; a rule opens on demand onto its details.
        const open = node.type === 'group' ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
        const item = new vscode.TreeItem(view.label, view.collapsible ? open : vscode.TreeItemCollapsibleState.None);
        item.description = view.description;
        item.tooltip = view.tooltip;
        item.contextValue = view.contextValue;
        item.iconPath = new vscode.ThemeIcon(view.icon);
        if (node.type === 'rule') {  // a click opens its page
            item.command = { command: TOOL_CONFIG.commands.showLearnedRule, title: 'Show learned rule', arguments: [node] };
        }
        const folder = this.folder();
        if (node.type === 'detail' && node.location && folder) {
            const line = Math.max(node.location.line - 1, 0);
            item.command = {
                command: 'vscode.open',
                title: 'Open',
                arguments: [vscode.Uri.joinPath(vscode.Uri.file(folder), node.location.path), { selection: new vscode.Range(new vscode.Position(line, 0), new vscode.Position(line, 0)) }],
            };
        }
        return item;
    }

    getChildren(node?: RuleNode): Promise<RuleNode[]> | RuleNode[] {
        if (node?.type === 'group') {
            return node.rules.map((rule) => ({ type: 'rule', rule }));
        }
        if (node?.type === 'rule') {
            return ruleDetails(node.rule);
        }
        if (node) {
            return [];
        }
        this.rules ??= this.load();
        return this.rules;
    }

    private async load(): Promise<RuleNode[]> {
        const folder = this.folder();
        if (!folder) {
            return [{ type: 'message', text: 'Open a folder to see its learned rules.' }];
        }
        try {
            const groups = ruleGroups(await this.cli.list(folder));
            return groups.length ? groups : [{ type: 'message', text: 'No learned rules yet ("Tritonsmith: Learn rules now").' }];
        } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            this.log(`rules review failed: ${message}`);
            return [{ type: 'message', text: `Could not list learned rules: ${message}` }];
        }
    }

    dispose(): void {
        this.changed.dispose();
    }
}

/** The rule a context-menu command was invoked on. */
export function ruleOf(arg: unknown): LearnedRule | undefined {
    if (typeof arg === 'object' && arg !== null && (arg as RuleNode).type === 'rule') {
        return (arg as { rule: LearnedRule }).rule;
    }
    return undefined;
}

/** "Learn rules now": induce over the workspace's failure log, say what was learned, refresh the view. */
export async function learnRules(cli: RulesCli, folder: string | undefined, tree: RulesTreeProvider): Promise<void> {
    if (!folder) {
        void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: open a folder to learn its rules.`);
        return;
    }
    try {
        const learned = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `${TOOL_CONFIG.displayName}: learning rules from the failure log…` },
            () => cli.induce(folder),
        );
        tree.refresh();
        const show = 'Show learned rules';
        const choice = await vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: ${describeLearned(learned)}`, show);
        if (choice === show) {
            await vscode.commands.executeCommand(`${TOOL_CONFIG.rulesViewId}.focus`);
        }
    } catch (error) {
        void vscode.window.showErrorMessage(`${TOOL_CONFIG.displayName}: learning rules failed: ${error instanceof Error ? error.message : String(error)}`);
    }
}

/** Accept or reject the rule a context menu was opened on. */
export async function decideRule(
    cli: RulesCli,
    folder: string | undefined,
    tree: RulesTreeProvider,
    arg: unknown,
    decision: 'accept' | 'reject',
): Promise<void> {
    const rule = ruleOf(arg);
    if (!rule || !folder) {
        void vscode.window.showInformationMessage(`${TOOL_CONFIG.displayName}: ${decision} a rule from the "Learned rules" view.`);
        return;
    }
    try {
        await cli.decide(folder, rule.code, decision);
    } catch (error) {
        void vscode.window.showErrorMessage(`${TOOL_CONFIG.displayName}: could not ${decision} ${rule.code}: ${error instanceof Error ? error.message : String(error)}`);
    }
    tree.refresh();
}
