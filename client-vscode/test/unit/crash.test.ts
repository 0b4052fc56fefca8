import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CrashPolicy, RecentOutput, crashMessage, recording } from '../../src/crash';

describe('server crashes', () => {
    it('restart four times within three minutes, then stop; old crashes are forgotten', () => {
        const policy = new CrashPolicy();
        assert.deepEqual([0, 1000, 2000, 3000].map((t) => policy.closed(t)), [true, true, true, true]);
        assert.equal(policy.closed(4000), false, 'the fifth in three minutes');
        const later = new CrashPolicy();
        [0, 1, 2, 3].forEach((t) => later.closed(t));
        assert.equal(later.closed(4 * 60_000), true, 'the first four are older than the window');
        assert.equal(later.recent, 1);
    });

    it("keep the server's last output lines, across partial writes, through a recording channel", () => {
        const recent = new RecentOutput(3);
        const written: string[] = [];
        const channel = recording({ append: (v: string) => written.push(v), appendLine: (v: string) => written.push(`${v}\n`), name: 'T' }, recent);
        channel.append('INFO starting\nTraceback (most');
        channel.append(' recent call last):\n  File "x.py"\n');
        channel.appendLine('MemoryError');
        assert.equal(channel.name, 'T');
        assert.equal(written.length, 3, 'everything still reaches the channel');
        assert.deepEqual(recent.last(3), ['Traceback (most recent call last):', '  File "x.py"', 'MemoryError']);
        assert.match(crashMessage('Tritonsmith', 5, recent.last(2)), /stopped 5 times in 3 minutes and was not restarted\. Its last output: " {2}File "x\.py" \/ MemoryError"/);
    });
});

describe('the language client\'s error handler', () => {
    it('restarts on close until the policy gives up, then stops and tells the user once', async () => {
        const { crashHandler } = await import('../../src/server');
        const { CloseAction, ErrorAction } = await import('vscode-languageclient/node');
        let gaveUp = 0;
        let now = 0;
        const handler = crashHandler(new CrashPolicy(2, 60_000), () => gaveUp++, () => (now += 1000));
        const actions = [];
        for (let i = 0; i < 3; i++) {
            actions.push(((await handler.closed()) as { action: number }).action);
        }
        assert.deepEqual(actions, [CloseAction.Restart, CloseAction.Restart, CloseAction.DoNotRestart]);
        assert.equal(gaveUp, 1);
        assert.equal(((await handler.error(new Error('x'), undefined, 1)) as { action: number }).action, ErrorAction.Continue);
        assert.equal(((await handler.error(new Error('x'), undefined, 4)) as { action: number }).action, ErrorAction.Shutdown);
    });
});
