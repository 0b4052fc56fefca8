import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { registerCommands, ruleLinksAt, setApiKey, type CommandHandlers } from '../../src/commands';
import { TOOL_CONFIG } from '../../src/config';
import { Position, Range, Uri, fake } from './fake/vscode';

interface Manifest {
    contributes: { commands: { command: string }[] };
}

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as Manifest;
const noop = () => undefined;
const handlers = Object.fromEntries(Object.keys(TOOL_CONFIG.commands).map((key) => [key, noop])) as unknown as CommandHandlers;

describe('commands', () => {
    beforeEach(() => fake.reset());

    it('registers exactly the commands package.json contributes', () => {
        registerCommands(handlers);
        const contributed = manifest.contributes.commands.map((command) => command.command);
        assert.deepEqual([...fake.registeredCommands].sort(), [...contributed].sort());
    });

    it("uses tritonsmith.* ids that never collide with the server's tritonsmith.server.*", () => {
        for (const id of Object.values(TOOL_CONFIG.commands)) {
            assert.ok(id.startsWith('tritonsmith.'), id);
            assert.ok(!id.startsWith(TOOL_CONFIG.serverCommandPrefix), id);
        }
    });
});

describe('ruleLinksAt', () => {
    const at = (line: number, character: number) => new Position(line, character);
    const range = new Range(at(3, 4), at(3, 20));

    it("uses the diagnostic's own link, or the docs page of its code", () => {
        const diagnostics = [
            { range, source: 'tritonsmith', code: { value: 'TS101', target: Uri.parse('https://example.com/TS101.md') } },
            { range, source: 'tritonsmith', code: 'TS201' },
        ];
        assert.deepEqual(ruleLinksAt(diagnostics, at(3, 10)), [
            { code: 'TS101', url: 'https://example.com/TS101.md' },
            { code: 'TS201', url: 'https://github.com/tritonsmith/tritonsmith/blob/main/docs/rules/TS201.md' },
        ]);
    });

    it("ignores other tools' diagnostics and diagnostics away from the cursor", () => {
        const diagnostics = [
            { range, source: 'Pylance', code: 'reportUndefinedVariable' },
            { range, source: 'tritonsmith', code: 'TS101' },
        ];
        assert.deepEqual(ruleLinksAt(diagnostics, at(5, 0)), []);
        // A rule finding the compiler confirmed names both sources: still ours, linked once.
        const merged = [{ range, source: 'tritonsmith, tritonsmith-verify', code: { value: 'TS901', target: Uri.parse('file:///cache/TS901.md') } }];
        assert.deepEqual(ruleLinksAt(merged, at(3, 4)), [{ code: 'TS901', url: 'file:///cache/TS901.md' }]);
        assert.deepEqual(
            ruleLinksAt(diagnostics, at(3, 4)).map((link) => link.code),
            ['TS101'],
        );
    });
});

describe('setApiKey', () => {
    beforeEach(() => fake.reset());

    function secrets() {
        const stored = new Map<string, string>();
        return {
            stored,
            storage: {
                get: (key: string) => Promise.resolve(stored.get(key)),
                store: (key: string, value: string) => Promise.resolve(void stored.set(key, value)),
                delete: (key: string) => Promise.resolve(void stored.delete(key)),
                onDidChange: () => ({ dispose: noop }),
            },
        };
    }

    it('stores the key in SecretStorage and never in settings', async () => {
        const { stored, storage } = secrets();
        fake.inputAnswers.push('  sk-ant-secret  ');
        assert.equal(await setApiKey(storage as never), true);
        assert.equal(stored.get(TOOL_CONFIG.apiKeySecret), 'sk-ant-secret');
        assert.equal(fake.settings.size, 0);
    });

    it('removes the key on an empty answer and changes nothing when dismissed', async () => {
        const { stored, storage } = secrets();
        stored.set(TOOL_CONFIG.apiKeySecret, 'old');
        fake.inputAnswers.push(undefined);
        assert.equal(await setApiKey(storage as never), false);
        assert.equal(stored.get(TOOL_CONFIG.apiKeySecret), 'old');
        fake.inputAnswers.push('');
        assert.equal(await setApiKey(storage as never), true);
        assert.equal(stored.has(TOOL_CONFIG.apiKeySecret), false);
    });
});
