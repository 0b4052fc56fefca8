import assert from 'node:assert/strict';
import * as os from 'node:os';
import { afterEach, describe, it } from 'node:test';
import { ServerManager } from '../../src/server';
import { StatusItem } from '../../src/status';
import { fake } from './fake/vscode';

/** A first run with an interpreter that lacks tritonsmith (issue 34): the install question is
 * non-modal and never holds a start, a restart or a command; it offers "Choose interpreter". */

const lines: string[] = [];
const output = {
    info: (line: string) => lines.push(line),
    warn: (line: string) => lines.push(line),
    error: (line: string) => lines.push(line),
    show: () => undefined,
} as unknown as import('vscode').LogOutputChannel;
const secrets = { get: () => Promise.resolve(undefined) } as unknown as import('vscode').SecretStorage;
const hooks = { onSearchResult: () => undefined, onProgress: () => false, onSearchProgress: () => undefined, onStopped: () => undefined };

/** `promise`, or a failure naming `what` after `ms` (a start held by the question never ends). */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} waited for the answer`)), ms)));
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function manager(): ServerManager {
    // `false -c ...` exits 1: an interpreter that runs but cannot import tritonsmith.
    fake.settings.set('tritonsmith.interpreter', '/bin/false');
    return new ServerManager({ extensionPath: os.tmpdir(), output, status: new StatusItem(), secrets, hooks });
}

describe('first run without tritonsmith in the interpreter', () => {
    afterEach(() => fake.reset());

    it('asks without waiting for the answer: start and restart finish while the question is open', async () => {
        let answer: (value: string | undefined) => void = () => undefined;
        fake.messageAnswers.push(new Promise((resolve) => (answer = resolve)));
        const server = manager();
        await within(5000, 'the start', server.start()); // resolves with the question still open
        const question = fake.messages.find((m) => m.kind === 'warning');
        assert.ok(question, 'the install question was shown');
        assert.match(question.text, /not installed in \/bin\/false/);
        assert.deepEqual(question.items.slice(1), ['Choose interpreter', 'Not now']);
        fake.messageAnswers.push(undefined); // the restart's own question: dismissed
        await within(5000, 'the restart', server.restart('a test')); // the queue is free
        answer(undefined);
        await server.stop();
    });

    it('"Choose interpreter" opens the interpreter picker', async () => {
        fake.messageAnswers.push('Choose interpreter');
        const server = manager();
        await server.start();
        await new Promise((resolve) => setTimeout(resolve, 10)); // the answer's handler runs after the start
        assert.ok(fake.executed.some((c) => c.command === 'tritonsmith.chooseInterpreter'), JSON.stringify(fake.executed));
        await server.stop();
    });
});
