import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { levelled, serverLogLine } from '../../src/serverLog';

describe('server log lines in the output channel', () => {
    it('take the level the server wrote, once, and keep other lines as info', () => {
        assert.deepEqual(serverLogLine('WARNING pygls.protocol: a real problem'), { level: 'warn', text: 'pygls.protocol: a real problem' });
        assert.deepEqual(serverLogLine('INFO tritonsmith.server.jobs: k.py: compiling'), { level: 'info', text: 'tritonsmith.server.jobs: k.py: compiling' });
        assert.deepEqual(serverLogLine('Traceback (most recent call last):'), { level: 'info', text: 'Traceback (most recent call last):' });
    });

    it('cuts chunks at newlines, whatever the chunks, and passes the rest of the channel through', () => {
        const calls: string[] = [];
        const channel = {
            name: 'Tritonsmith',
            append: (value: string) => calls.push(`append:${value}`),
            trace: (m: string) => calls.push(`trace:${m}`),
            debug: (m: string) => calls.push(`debug:${m}`),
            info: (m: string) => calls.push(`info:${m}`),
            warn: (m: string) => calls.push(`warn:${m}`),
            error: (m: string) => calls.push(`error:${m}`),
        };
        const wrapped = levelled(channel);
        wrapped.append('INFO tritonsmith.server.jobs: one\nERR');
        wrapped.append('OR tritonsmith: two\r\n\n');
        wrapped.append('CRITICAL x: three');
        assert.deepEqual(calls, ['info:tritonsmith.server.jobs: one', 'error:tritonsmith: two']);
        wrapped.append('\n');
        assert.equal(calls.at(-1), 'error:x: three');
        wrapped.append('ERROR tritonsmith.server: checking failed\nTraceback (most recent call last):\nINFO k: fine\nplain\n');
        assert.deepEqual(calls.slice(-4), ['error:tritonsmith.server: checking failed', 'error:Traceback (most recent call last):',
            'info:k: fine', 'info:plain']);
        wrapped.append('x'.repeat(70 * 1024));
        assert.equal(calls.at(-1)?.length, 'info:'.length + 70 * 1024, 'an endless line is shown, not held');
        wrapped.warn('direct');
        assert.equal(calls.at(-1), 'warn:direct');
        assert.equal(wrapped.name, 'Tritonsmith');
    });
});
