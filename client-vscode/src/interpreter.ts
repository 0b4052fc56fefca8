/**
 * Which Python runs the server. In order: the `tritonsmith.interpreter` setting, else the
 * Python extension's active environment (when ms-python.python is installed; it is never a hard
 * dependency), else `python3` on PATH.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';

export type InterpreterSource = 'setting' | 'python-extension' | 'path';

export interface Interpreter {
    /** What to spawn: an absolute path, or a bare name looked up on PATH. */
    readonly command: string;
    readonly source: InterpreterSource;
}

/** The part of the Python extension's API this extension uses (`PythonExtension.environments`). */
export interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
        environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    readonly onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
}

interface PythonExtensionExports {
    readonly ready?: Promise<void>;
    readonly environments?: PythonEnvironmentsApi;
}

/** The Python extension's environments API, or undefined when it is absent or fails. */
export async function pythonEnvironmentsApi(): Promise<PythonEnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionExports>(TOOL_CONFIG.pythonExtensionId);
    if (!extension) {
        return undefined;
    }
    try {
        // Typed loosely: an old or broken Python extension may export nothing.
        const exports = (extension.isActive ? extension.exports : await extension.activate()) as
            | PythonExtensionExports
            | undefined;
        await exports?.ready;
        return exports?.environments;
    } catch {
        return undefined;
    }
}

/**
 * `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` expanded; a relative path
 * with a separator taken from the workspace folder; a bare name ("python3.12") left for PATH.
 */
export function expandInterpreterPath(
    value: string,
    workspaceFolder: string | undefined,
    env: NodeJS.ProcessEnv = process.env,
    home: string = os.homedir(),
): string {
    let result = value
        .replace(/\$\{workspaceFolder\}/g, workspaceFolder ?? '')
        .replace(/\$\{userHome\}/g, home)
        .replace(/\$\{env:([^}]+)\}/g, (_match, name: string) => env[name] ?? '');
    if (result === '~' || result.startsWith('~/')) {
        result = path.join(home, result.slice(1));
    }
    const hasSeparator = result.includes('/') || result.includes(path.sep);
    if (hasSeparator && !path.isAbsolute(result) && workspaceFolder) {
        result = path.join(workspaceFolder, result);
    }
    return result;
}

/** The `tritonsmith.interpreter` setting for `resource`, expanded; undefined when empty. */
export function interpreterSetting(resource?: vscode.Uri): string | undefined {
    const value = vscode.workspace
        .getConfiguration(TOOL_CONFIG.settingsSection, resource)
        .get<string>('interpreter', '')
        .trim();
    if (!value) {
        return undefined;
    }
    const folder = resource
        ? vscode.workspace.getWorkspaceFolder(resource)
        : vscode.workspace.workspaceFolders?.[0];
    return expandInterpreterPath(value, folder?.uri.fsPath);
}

/** The active environment's executable, as the Python extension reports it. */
export async function interpreterFromPythonExtension(resource?: vscode.Uri): Promise<string | undefined> {
    const api = await pythonEnvironmentsApi();
    if (!api) {
        return undefined;
    }
    try {
        const active = api.getActiveEnvironmentPath(resource);
        const environment = await api.resolveEnvironment(active);
        return environment?.executable.uri?.fsPath || undefined;
    } catch {
        return undefined;
    }
}

/** The interpreter to run the server with, and where it came from. */
export async function resolveInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
    const setting = interpreterSetting(resource);
    if (setting) {
        return { command: setting, source: 'setting' };
    }
    const fromExtension = await interpreterFromPythonExtension(resource);
    if (fromExtension) {
        return { command: fromExtension, source: 'python-extension' };
    }
    return { command: TOOL_CONFIG.fallbackInterpreter, source: 'path' };
}

/** The command a user runs to pick another interpreter: the Python extension's picker where it is installed, else this extension's setting. */
export function interpreterPicker(pythonExtensionInstalled: boolean): { command: string; args: unknown[] } {
    return pythonExtensionInstalled
        ? { command: 'python.setInterpreter', args: [] }
        : { command: 'workbench.action.openSettings', args: [`${TOOL_CONFIG.settingsSection}.interpreter`] };
}

/** `tritonsmith.chooseInterpreter`. A change of interpreter restarts the server (restart.ts). */
export async function chooseInterpreter(): Promise<void> {
    const picker = interpreterPicker(vscode.extensions.getExtension(TOOL_CONFIG.pythonExtensionId) !== undefined);
    await vscode.commands.executeCommand(picker.command, ...picker.args);
}
