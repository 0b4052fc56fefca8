/**
 * When the server restarts: only when the interpreter changes (DESIGN.md, "Settings"), debounced.
 * Every other setting reaches the running server through `workspace/didChangeConfiguration`.
 */
import { TOOL_CONFIG } from './config';

/** The part of `vscode.ConfigurationChangeEvent` this module needs. */
export interface ConfigurationChange {
    affectsConfiguration(section: string): boolean;
}

/** Whether a settings change may change the interpreter (and so may need a restart). */
export function needsRestart(change: ConfigurationChange): boolean {
    return TOOL_CONFIG.restartSettings.some((section) => change.affectsConfiguration(section));
}

/** Whether a server running `running` must restart to run `next` instead. */
export function interpreterChanged(running: string | undefined, next: string): boolean {
    return running !== next;
}

export interface Timers {
    setTimeout(callback: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
    setTimeout: (callback, ms) => setTimeout(callback, ms),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Calls `action` once, `ms` after the last of a burst of triggers. */
export class Debouncer {
    private handle: unknown;

    constructor(
        private readonly action: () => void,
        private readonly ms: number = TOOL_CONFIG.restartDebounceMs,
        private readonly timers: Timers = realTimers,
    ) {}

    trigger(): void {
        this.cancel();
        this.handle = this.timers.setTimeout(() => {
            this.handle = undefined;
            this.action();
        }, this.ms);
    }

    cancel(): void {
        if (this.handle !== undefined) {
            this.timers.clearTimeout(this.handle);
            this.handle = undefined;
        }
    }

    dispose(): void {
        this.cancel();
    }
}
