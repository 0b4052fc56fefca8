/**
 * The server's stderr in the output channel at each line's own level. The server writes
 * `LEVEL logger: message` (tritonsmith/server/__init__.py); vscode-languageclient appends stderr
 * as it arrives, so a log channel would show every line as "[info] INFO …" and a warning as
 * "[info] WARNING …". Lines are cut at newlines (a chunk may end mid-line), their level prefix
 * becomes the channel's level, and a line without one (a traceback's) keeps the level of the
 * line before it.
 */

export type ChannelLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

interface LevelledChannel {
    append(value: string): void;
    trace(message: string): void;
    debug(message: string): void;
    info(message: string): void;
    warn(message: string): void;
    error(message: string): void;
}

/** The most of one unfinished line held back (a server printing without newlines must not grow it for ever). */
const MAX_PENDING = 64 * 1024;

const LEVELS: Record<string, ChannelLevel> = {
    DEBUG: 'debug',
    INFO: 'info',
    WARNING: 'warn',
    ERROR: 'error',
    CRITICAL: 'error',
};

/** One stderr line of the server: its level (`previous` when it names none) and the text after the level's name. */
export function serverLogLine(line: string, previous: ChannelLevel = 'info'): { level: ChannelLevel; text: string } {
    const match = /^(DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/s.exec(line);
    return match ? { level: LEVELS[match[1] ?? 'INFO'] ?? 'info', text: match[2] ?? '' } : { level: previous, text: line };
}

/** `channel` with some of its methods replaced; the others pass through, bound to it. */
export function overriding<T extends object>(channel: T, methods: Partial<Record<keyof T, unknown>>): T {
    return new Proxy(channel, {
        get(target, property, receiver) {
            if (Object.prototype.hasOwnProperty.call(methods, property)) {
                return methods[property as keyof T];
            }
            const value: unknown = Reflect.get(target, property, receiver);
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
    });
}

/** `channel`, with what is appended to it (the server's stderr) logged line by line at its level. */
export function levelled<T extends LevelledChannel>(channel: T): T {
    let pending = '';
    let last: ChannelLevel = 'info';
    const append = (value: string) => {
        const lines = (pending + value).split('\n');
        pending = lines.pop() ?? '';
        if (pending.length > MAX_PENDING) {  // output that never ends its line: show it anyway
            lines.push(pending);
            pending = '';
        }
        for (const line of lines) {
            if (line.trim()) {
                const { level, text } = serverLogLine(line.replace(/\r$/, ''), last);
                channel[level](text);
                last = level;
            }
        }
    };
    return overriding(channel, { append } as Partial<Record<keyof T, unknown>>);
}
