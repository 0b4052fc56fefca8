/**
 * When the server dies on its own: restart it a few times, then stop and say so with its last
 * output and a Restart button (vscode-languageclient's default gives up with a generic message,
 * and its restarts leave nothing in the status bar).
 */

import { overriding } from './serverLog';

/** Restarts after an unexpected exit, at most `max` within `windowMs`. */
export class CrashPolicy {
    private readonly crashes: number[] = [];

    constructor(
        private readonly max = 4,
        private readonly windowMs = 3 * 60_000,
    ) {}

    /** The server's connection closed unexpectedly at `now`: whether to restart it. */
    closed(now: number): boolean {
        this.crashes.push(now);
        while (this.crashes.length && (this.crashes[0] ?? now) < now - this.windowMs) {
            this.crashes.shift();
        }
        return this.crashes.length <= this.max;
    }

    get recent(): number {
        return this.crashes.length;
    }
}

/** The last lines written to an output channel (the server's stderr goes there), for the crash message. */
export class RecentOutput {
    private readonly lines: string[] = [];
    private partial = '';

    constructor(private readonly keep = 20) {}

    push(text: string): void {
        const parts = (this.partial + text).split(/\r?\n/);
        this.partial = parts.pop() ?? '';
        for (const line of parts) {
            if (line.trim()) {
                this.lines.push(line);
            }
        }
        this.lines.splice(0, Math.max(0, this.lines.length - this.keep));
    }

    /** The last `count` non-empty lines, oldest first. */
    last(count: number): string[] {
        const all = this.partial.trim() ? [...this.lines, this.partial] : this.lines;
        return all.slice(-count);
    }
}

/** `channel`, with everything appended to it also kept in `recent`. */
export function recording<T extends { append(value: string): void; appendLine(value: string): void }>(channel: T, recent: RecentOutput): T {
    const methods = {
        append: (value: string) => {
            recent.push(value);
            channel.append(value);
        },
        appendLine: (value: string) => {
            recent.push(`${value}\n`);
            channel.appendLine(value);
        },
    };
    return overriding(channel, methods as Partial<Record<keyof T, unknown>>);
}

/** The message after the last restart failed: what happened, the last output, what to do. */
export function crashMessage(name: string, crashes: number, lastLines: readonly string[]): string {
    const last = lastLines.length ? ` Its last output: "${lastLines.join(' / ').slice(-300)}".` : '';
    return `${name}: the server stopped ${crashes} times in 3 minutes and was not restarted.${last}`;
}
