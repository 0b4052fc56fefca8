import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statusView, type ServerState } from '../../src/status';

describe('statusView', () => {
    it('shows each state, and sends "not installed" to the install command', () => {
        const states: ServerState[] = ['starting', 'ready', 'error', 'notInstalled', 'stopped'];
        const views = states.map((state) => statusView(state, '/py'));
        assert.match(views[0]?.text ?? '', /sync~spin/);
        assert.match(views[1]?.text ?? '', /check/);
        assert.equal(views[2]?.isError, true);
        assert.match(views[3]?.text ?? '', /not installed/);
        assert.equal(views[3]?.command, 'tritonsmith.installServer');
        assert.equal(views[1]?.command, 'tritonsmith.showOutput');
        assert.ok(views.every((view) => view.tooltip.includes('/py')));
    });
});

describe('statusView for what the user must fix', () => {
    it('warns "lint only" without PyTorch and Triton, and installs the extra on click', () => {
        const view = statusView('lintOnly', '/py');
        assert.match(view.text, /warning\) Tritonsmith: lint only/);
        assert.match(view.tooltip, /saving does not compile or verify/);
        assert.equal(view.command, 'tritonsmith.installServer');
        assert.equal(view.isError, true);
    });

    it('says "no Python" for an interpreter that cannot run, and chooses one on click', () => {
        const view = statusView('noPython', '/missing/python: ENOENT');
        assert.match(view.text, /no Python/);
        assert.equal(view.command, 'tritonsmith.chooseInterpreter');
        assert.ok(view.tooltip.includes('ENOENT'));
    });
});
