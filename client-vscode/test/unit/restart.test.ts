import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Debouncer, interpreterChanged, needsRestart, type Timers } from '../../src/restart';

/** A ConfigurationChangeEvent stub: affectsConfiguration as VS Code answers it for `changed`. */
function change(...changed: string[]) {
    return {
        affectsConfiguration: (section: string) =>
            changed.some((key) => key === section || key.startsWith(`${section}.`) || section.startsWith(`${key}.`)),
    };
}

describe('needsRestart', () => {
    it('is true only when tritonsmith.interpreter changed', () => {
        assert.equal(needsRestart(change('tritonsmith.interpreter')), true);
        assert.equal(needsRestart(change('tritonsmith.ignore')), false);
        assert.equal(needsRestart(change('tritonsmith.tritonVersion', 'tritonsmith.select')), false);
        assert.equal(needsRestart(change('tritonsmith.verifyOnSave', 'tritonsmith.device', 'tritonsmith.budget')), false);
        assert.equal(needsRestart(change('editor.fontSize')), false);
        assert.equal(needsRestart(change('tritonsmith.ignore', 'tritonsmith.interpreter')), true);
    });
});

describe('interpreterChanged', () => {
    it('restarts for another program or when nothing runs, not for the same one', () => {
        assert.equal(interpreterChanged('/a/python', '/a/python'), false);
        assert.equal(interpreterChanged('/a/python', '/b/python'), true);
        assert.equal(interpreterChanged(undefined, '/a/python'), true);
    });
});

describe('Debouncer', () => {
    function manualTimers() {
        let now = 0;
        const pending = new Map<number, { at: number; callback: () => void }>();
        let next = 1;
        const timers: Timers = {
            setTimeout: (callback, ms) => {
                pending.set(next, { at: now + ms, callback });
                return next++;
            },
            clearTimeout: (handle) => pending.delete(handle as number),
        };
        const advance = (ms: number) => {
            now += ms;
            for (const [id, timer] of [...pending]) {
                if (timer.at <= now) {
                    pending.delete(id);
                    timer.callback();
                }
            }
        };
        return { timers, advance };
    }

    it('runs once, 1 s after the last trigger of a burst', () => {
        const { timers, advance } = manualTimers();
        let runs = 0;
        const debouncer = new Debouncer(() => runs++, 1000, timers);
        debouncer.trigger();
        advance(500);
        debouncer.trigger();
        advance(900);
        assert.equal(runs, 0);
        advance(100);
        assert.equal(runs, 1);
        advance(5000);
        assert.equal(runs, 1);
    });

    it('defaults to a 1 s delay and runs nothing after dispose', () => {
        const { timers, advance } = manualTimers();
        let runs = 0;
        const debouncer = new Debouncer(() => runs++, undefined, timers);
        debouncer.trigger();
        advance(999);
        assert.equal(runs, 0);
        advance(1);
        assert.equal(runs, 1);
        debouncer.trigger();
        debouncer.dispose();
        advance(2000);
        assert.equal(runs, 1);
    });
});
