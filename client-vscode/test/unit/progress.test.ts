import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { ProgressTracker, activityKind, activityView } from '../../src/progress';
import { ProgressLocation, fake } from './fake/vscode';

async function settle(): Promise<void> {
    for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setImmediate(resolve));
    }
}

describe('progress', () => {
    beforeEach(() => fake.reset());

    it('tells searches from compile jobs by title', () => {
        assert.equal(activityKind('Optimizing add_kernel'), 'search');
        assert.equal(activityKind('Compiling kernels for sm_90'), 'compile');
        assert.equal(activityKind('Indexing'), 'other');
        assert.match(activityView([{ kind: 'compile', title: 'Compiling kernels for sm_90' }], undefined)?.text ?? '', /compiling…/);
        assert.match(
            activityView([{ kind: 'compile', title: 'Compiling', message: 'checking add against its reference' }], undefined)?.text ?? '',
            /verifying…/,
        );
        assert.equal(activityView([], undefined), undefined);
        assert.match(activityView([], { title: 'Optimizing k', message: 'done: 2.00× faster (interpreter time), 3 candidates' })?.text ?? '', /rocket\) k: done: 2\.00×/);
    });

    it('shows a search as a cancellable notification and in the status bar; cancel reaches the server', async () => {
        const tracker = new ProgressTracker();
        const item = fake.statusItems[0];
        assert.ok(item);
        let cancelled = 0;
        const cancel = () => cancelled++;
        assert.equal(tracker.handle('t1', { kind: 'begin', title: 'Optimizing add_kernel', cancellable: true, percentage: 0, message: 'evaluating the original kernel (interpreter)' }, cancel), false);
        await settle();
        const note = fake.progress[0];
        assert.ok(note);
        assert.equal(note.options.location, ProgressLocation.Notification);
        assert.equal(note.options.cancellable, true);
        assert.match(note.options.title ?? '', /Optimizing add_kernel/);
        tracker.handle('t1', { kind: 'report', message: 'step 1/3 · best 1.20× (interpreter time)', percentage: 33 }, cancel);
        assert.deepEqual(note.reports.at(-1), { message: 'step 1/3 · best 1.20× (interpreter time)', increment: 33 });
        assert.match(item.text, /add_kernel: step 1\/3/);
        assert.equal(tracker.running()[0]?.kernel, 'add_kernel');
        note.cancel();
        assert.equal(cancelled, 1);
        assert.equal(tracker.handle('t1', { kind: 'end', message: 'cancelled after 1 candidates' }, cancel), true, 'end frees the default part');
        await settle();
        assert.equal(note.done, true);
        assert.match(item.text, /add_kernel: cancelled after 1 candidates/);
        assert.deepEqual(tracker.running(), []);
        tracker.settled('other_kernel');
        assert.match(item.text, /add_kernel: cancelled/, 'another kernel\'s decision changes nothing');
        tracker.settled('add_kernel');
        assert.equal(item.visible, false, 'accepted or rejected: the status bar no longer shows it');
    });

    it('shows compile jobs only in the status bar, and leaves unknown progress to the default display', () => {
        const tracker = new ProgressTracker();
        const item = fake.statusItems[0];
        assert.ok(item);
        assert.equal(tracker.handle('c', { kind: 'begin', title: 'Compiling kernels for sm_90', cancellable: false }, () => undefined), false);
        assert.equal(fake.progress.length, 0);
        assert.equal(item.visible, true);
        tracker.handle('c', { kind: 'report', message: 'checking add against its reference' }, () => undefined);
        assert.match(item.text, /verifying…/);
        tracker.handle('c', { kind: 'end', message: 'done' }, () => undefined);
        assert.equal(item.visible, false);
        assert.equal(tracker.handle('o', { kind: 'begin', title: 'Something else' }, () => undefined), true);
        assert.equal(tracker.handle('o', { kind: 'report', message: 'x' }, () => undefined), true);
    });
});
