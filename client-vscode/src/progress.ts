/**
 * The server's work-done progress, shown by kind (vscode-languageclient's `handleWorkDoneProgress`
 * middleware hands every value here first):
 *   - a search (`Optimizing <kernel>`): a notification with a Cancel button (cancel sends
 *     `window/workDoneProgress/cancel`), step i/N and the best speedup so far, and the status bar;
 *   - a save's compile job (`Compiling …`, `checking … against its reference`): the status bar
 *     only ("compiling…", "verifying…");
 *   - anything else: vscode-languageclient's own display.
 * The status bar item keeps the last search's end message ("done: 1.83× faster …") until the
 * result is accepted or rejected (`settled`).
 */
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';

export type ProgressValue =
    | { readonly kind: 'begin'; readonly title: string; readonly message?: string; readonly percentage?: number; readonly cancellable?: boolean }
    | { readonly kind: 'report'; readonly message?: string; readonly percentage?: number; readonly cancellable?: boolean }
    | { readonly kind: 'end'; readonly message?: string };

export type ActivityKind = 'search' | 'compile' | 'other';

export function activityKind(title: string): ActivityKind {
    if (title.startsWith(TOOL_CONFIG.searchProgressPrefix)) {
        return 'search';
    }
    return title.startsWith(TOOL_CONFIG.compileProgressPrefix) ? 'compile' : 'other';
}

/** A search in progress, as the search view lists it. */
export interface RunningSearch {
    readonly title: string;
    readonly kernel: string;
    readonly message?: string;
    readonly percentage?: number;
}

export interface ActivityView {
    readonly text: string;
    readonly tooltip: string;
}

interface Activity {
    readonly kind: ActivityKind;
    readonly title: string;
    message?: string;
    percentage?: number;
    // A search's notification:
    reporter?: vscode.Progress<{ message?: string; increment?: number }>;
    reported: number;
    resolve?: () => void;
}

/** What the status bar shows: a running search first, else a running compile, else the last search's end. */
export function activityView(
    running: readonly { kind: ActivityKind; title: string; message?: string }[],
    lastSearch: { title: string; message: string } | undefined,
): ActivityView | undefined {
    const search = running.find((a) => a.kind === 'search');
    if (search) {
        const kernel = search.title.slice(TOOL_CONFIG.searchProgressPrefix.length);
        return {
            text: `$(sync~spin) ${kernel}: ${search.message ?? 'starting'}`,
            tooltip: `${search.title}: ${search.message ?? 'starting'}\nClick for the search view.`,
        };
    }
    const compile = running.find((a) => a.kind === 'compile');
    if (compile) {
        const verifying = TOOL_CONFIG.verifyProgressPattern.test(compile.message ?? '');
        return {
            text: `$(sync~spin) ${verifying ? 'verifying…' : 'compiling…'}`,
            tooltip: `${TOOL_CONFIG.displayName}: ${compile.title}${compile.message ? `: ${compile.message}` : ''}`,
        };
    }
    if (lastSearch) {
        const kernel = lastSearch.title.slice(TOOL_CONFIG.searchProgressPrefix.length);
        const faster = /faster/.test(lastSearch.message);
        return {
            text: `$(${faster ? 'rocket' : 'info'}) ${kernel}: ${lastSearch.message}`,
            tooltip: `${lastSearch.title}: ${lastSearch.message}\nClick for the search view.`,
        };
    }
    return undefined;
}

/** Routes work-done progress to notifications and a status bar item. */
export class ProgressTracker implements vscode.Disposable {
    private readonly active = new Map<string, Activity>();
    private lastSearch: { title: string; message: string } | undefined;
    private readonly item: vscode.StatusBarItem;
    private readonly changed = new vscode.EventEmitter<void>();
    readonly onDidChange = this.changed.event;

    constructor() {
        this.item = vscode.window.createStatusBarItem('tritonsmith.activity', vscode.StatusBarAlignment.Right, 99);
        this.item.name = `${TOOL_CONFIG.displayName} activity`;
        this.item.command = TOOL_CONFIG.commands.showSearch;
    }

    /** The searches running now. */
    running(): RunningSearch[] {
        return [...this.active.values()]
            .filter((a) => a.kind === 'search')
            .map((a) => ({
                title: a.title,
                kernel: a.title.slice(TOOL_CONFIG.searchProgressPrefix.length),
                ...(a.message === undefined ? {} : { message: a.message }),
                ...(a.percentage === undefined ? {} : { percentage: a.percentage }),
            }));
    }

    /**
     * Handles one progress value; returns whether vscode-languageclient's default display should
     * see it too (only for progress that is not ours, and every `end`, which frees its part).
     */
    handle(token: string | number, value: ProgressValue, cancel: () => void): boolean {
        const key = String(token);
        if (value.kind === 'begin') {
            const kind = activityKind(value.title);
            if (kind === 'other') {
                return true;
            }
            const activity: Activity = { kind, title: value.title, reported: 0 };
            this.update(activity, value.message, value.percentage);
            this.active.set(key, activity);
            if (kind === 'search') {
                this.notify(activity, value.cancellable ?? false, cancel);
            }
            this.refresh();
            return false;
        }
        const activity = this.active.get(key);
        if (!activity) {
            return true;
        }
        if (value.kind === 'report') {
            this.update(activity, value.message, value.percentage);
            this.refresh();
            return false;
        }
        this.active.delete(key);
        activity.resolve?.();
        if (activity.kind === 'search') {
            this.lastSearch = { title: activity.title, message: value.message ?? 'done' };
        }
        this.refresh();
        return true;
    }

    private update(activity: Activity, message: string | undefined, percentage: number | undefined): void {
        if (message !== undefined) {
            activity.message = message;
        }
        if (percentage !== undefined) {
            activity.percentage = percentage;
        }
        if (activity.reporter) {
            const target = Math.max(0, Math.min(100, activity.percentage ?? 0));
            const increment = Math.max(0, target - activity.reported);
            activity.reported += increment;
            activity.reporter.report({ message: activity.message, increment });
        }
    }

    private notify(activity: Activity, cancellable: boolean, cancel: () => void): void {
        void vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `${TOOL_CONFIG.displayName}: ${activity.title}`, cancellable },
            (reporter, token) =>
                new Promise<void>((resolve) => {
                    if (!this.isActive(activity)) {
                        resolve(); // it ended before the notification came up
                        return;
                    }
                    activity.resolve = resolve;
                    activity.reporter = reporter;
                    token.onCancellationRequested(() => cancel());
                    this.update(activity, undefined, undefined);
                }),
        );
    }

    private isActive(activity: Activity): boolean {
        return [...this.active.values()].includes(activity);
    }

    private refresh(): void {
        const view = activityView([...this.active.values()], this.lastSearch);
        if (view) {
            this.item.text = view.text;
            this.item.tooltip = view.tooltip;
            this.item.show();
        } else {
            this.item.hide();
        }
        this.changed.fire();
    }

    /** The last search on `kernel` was accepted or rejected: the status bar no longer asks about it. */
    settled(kernel: string): void {
        if (this.lastSearch && this.lastSearch.title.slice(TOOL_CONFIG.searchProgressPrefix.length) === kernel) {
            this.lastSearch = undefined;
            this.refresh();
        }
    }

    /** The server stopped: its progress will not end by itself. */
    clear(): void {
        for (const activity of this.active.values()) {
            activity.resolve?.();
        }
        this.active.clear();
        this.refresh();
    }

    dispose(): void {
        this.clear();
        this.item.dispose();
        this.changed.dispose();
    }
}
