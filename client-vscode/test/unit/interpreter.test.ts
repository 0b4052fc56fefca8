import assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { TOOL_CONFIG } from '../../src/config';
import { expandInterpreterPath, interpreterPicker, resolveInterpreter } from '../../src/interpreter';
import { Uri, fake, workspace } from './fake/vscode';

function pythonExtension(executable: string | undefined, calls: string[] = []) {
    return {
        isActive: false,
        exports: undefined,
        activate: () =>
            Promise.resolve({
                ready: Promise.resolve(),
                environments: {
                    getActiveEnvironmentPath: () => {
                        calls.push('getActiveEnvironmentPath');
                        return { id: 'env', path: '/envs/env' };
                    },
                    resolveEnvironment: (env: { path: string }) => {
                        calls.push(`resolveEnvironment ${env.path}`);
                        return Promise.resolve({ executable: { uri: executable ? Uri.file(executable) : undefined } });
                    },
                },
            }),
    };
}

describe('resolveInterpreter', () => {
    beforeEach(() => fake.reset());

    it('uses the tritonsmith.interpreter setting first, even with the Python extension installed', async () => {
        fake.settings.set('tritonsmith.interpreter', '/opt/venv/bin/python');
        fake.extensions.set('ms-python.python', pythonExtension('/envs/env/bin/python'));
        assert.deepEqual(await resolveInterpreter(), { command: '/opt/venv/bin/python', source: 'setting' });
    });

    it("uses the Python extension's active environment when the setting is empty", async () => {
        const calls: string[] = [];
        fake.settings.set('tritonsmith.interpreter', '  ');
        fake.extensions.set('ms-python.python', pythonExtension('/envs/env/bin/python', calls));
        assert.deepEqual(await resolveInterpreter(), { command: '/envs/env/bin/python', source: 'python-extension' });
        assert.deepEqual(calls, ['getActiveEnvironmentPath', 'resolveEnvironment /envs/env']);
    });

    it('falls back to python3 on PATH without the Python extension', async () => {
        assert.deepEqual(await resolveInterpreter(), { command: TOOL_CONFIG.fallbackInterpreter, source: 'path' });
    });

    it('falls back to PATH when the Python extension resolves no executable or fails', async () => {
        fake.extensions.set('ms-python.python', pythonExtension(undefined));
        assert.equal((await resolveInterpreter()).source, 'path');
        fake.extensions.set('ms-python.python', {
            isActive: false,
            exports: undefined,
            activate: () => Promise.reject(new Error('broken')),
        });
        assert.equal((await resolveInterpreter()).source, 'path');
    });

    it('expands ${workspaceFolder} in the setting', async () => {
        workspace.workspaceFolders = [{ uri: Uri.file('/ws'), name: 'ws', index: 0 }];
        fake.settings.set('tritonsmith.interpreter', '${workspaceFolder}/.venv/bin/python');
        assert.equal((await resolveInterpreter()).command, path.join('/ws', '.venv/bin/python'));
    });
});

describe('expandInterpreterPath', () => {
    it('expands variables, ~ and workspace-relative paths, and leaves bare names for PATH', () => {
        assert.equal(expandInterpreterPath('.venv/bin/python', '/ws'), path.join('/ws', '.venv/bin/python'));
        assert.equal(expandInterpreterPath('~/py/bin/python', '/ws', {}, '/home/me'), path.join('/home/me', 'py/bin/python'));
        assert.equal(expandInterpreterPath('${env:VENV}/bin/python', undefined, { VENV: '/v' }), '/v/bin/python');
        assert.equal(expandInterpreterPath('${userHome}/p', undefined, {}, '/h'), '/h/p');
        assert.equal(expandInterpreterPath('python3.12', '/ws'), 'python3.12');
        assert.ok(os.homedir());
    });
});

describe('choosing an interpreter', () => {
    it("uses the Python extension's picker where it is installed, else opens this extension's setting", () => {
        assert.deepEqual(interpreterPicker(true), { command: 'python.setInterpreter', args: [] });
        assert.deepEqual(interpreterPicker(false), { command: 'workbench.action.openSettings', args: ['tritonsmith.interpreter'] });
    });
});
