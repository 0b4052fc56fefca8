/**
 * Is tritonsmith importable by the chosen interpreter, and if not, offer to install it.
 *
 * The .vsix carries the tritonsmith wheel (`bundled/tritonsmith-*.whl`). The core install is
 * `python -m pip install <wheel>`: pygls, tree-sitter and friends, never torch or triton. The
 * `[eval]` extra (torch and triton, gigabytes) is a separate offer that says so.
 */
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TOOL_CONFIG } from './config';

export type InstallState =
    | { readonly kind: 'installed'; readonly version: string; readonly evalReady?: boolean }
    | { readonly kind: 'missing'; readonly detail: string }
    | { readonly kind: 'no-python'; readonly detail: string };

export interface PipCommand {
    readonly command: string;
    readonly args: readonly string[];
}

export interface Offer {
    readonly kind: 'core' | 'eval';
    readonly message: string;
    /** The button that accepts; any other answer declines. */
    readonly accept: string;
    readonly command: PipCommand;
}

/** The result of running a program: exit code (null when it could not start) and its output. */
export interface RunResult {
    readonly code: number | null;
    readonly stdout: string;
    readonly stderr: string;
    /** Why it could not start or finish (`code` is 'ENOENT' for a missing program). */
    readonly error?: { readonly code?: string | number | null; readonly message: string };
}

export type Runner = (command: string, args: readonly string[], cwd: string | undefined) => Promise<RunResult>;

// The version, then whether torch and triton are installed (found, not imported: that takes seconds).
const IMPORT_CHECK =
    `import ${TOOL_CONFIG.module}; print(getattr(${TOOL_CONFIG.module}, "__version__", "unknown")); ` +
    'import importlib.util as u; print(int(all(u.find_spec(m) is not None for m in ("torch", "triton"))))';

/** Runs a program to completion (used for the import check). */
export const execRunner: Runner = (command, args, cwd) =>
    new Promise((resolve) => {
        execFile(
            command,
            [...args],
            { cwd, timeout: TOOL_CONFIG.importCheckTimeoutMs, windowsHide: true },
            (error, stdout, stderr) => {
                const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
                resolve({ code, stdout, stderr, error: error ?? undefined });
            },
        );
    });

/** Whether `python -c "import tritonsmith"` works, and the version when it does. */
export async function checkInstalled(python: string, cwd?: string, run: Runner = execRunner): Promise<InstallState> {
    const result = await run(python, ['-c', IMPORT_CHECK], cwd);
    if (result.code === 0) {
        const [version, evalFlag] = result.stdout.trim().split(/\r?\n/);
        const state = { kind: 'installed' as const, version: version?.trim() || 'unknown' };
        return evalFlag === undefined ? state : { ...state, evalReady: evalFlag.trim() === '1' };
    }
    if (result.error?.code === 'ENOENT' || result.error?.code === 'EACCES') {
        return { kind: 'no-python', detail: `cannot run ${python}: ${result.error.code}` };
    }
    const detail = (result.stderr.trim().split('\n').pop() ?? '') || result.error?.message || `exit code ${result.code}`;
    return { kind: 'missing', detail };
}

/** The wheel bundled in the extension, or undefined in a development checkout without one. */
export function findBundledWheel(extensionPath: string): string | undefined {
    const folder = path.join(extensionPath, TOOL_CONFIG.bundledDir);
    let names: string[];
    try {
        names = fs.readdirSync(folder);
    } catch {
        return undefined;
    }
    const wheels = names.filter((name) => TOOL_CONFIG.wheelPattern.test(name)).sort();
    const newest = wheels[wheels.length - 1];
    return newest ? path.join(folder, newest) : undefined;
}

/** `python -m pip install <wheel>`: the core only (its dependencies name no torch, no triton). */
export function coreInstallCommand(python: string, wheel: string | undefined): PipCommand {
    return { command: python, args: ['-m', 'pip', 'install', '--upgrade', wheel ?? TOOL_CONFIG.module] };
}

/** `python -m pip install "<wheel>[eval]"`: adds torch and triton. */
export function evalInstallCommand(python: string, wheel: string | undefined): PipCommand {
    return { command: python, args: ['-m', 'pip', 'install', `${wheel ?? TOOL_CONFIG.module}[${TOOL_CONFIG.evalExtra}]`] };
}

/** The offer to install the core, shown when tritonsmith is not importable. */
export function coreOffer(python: string, wheel: string | undefined): Offer {
    const from = wheel ? 'the wheel bundled with this extension' : 'PyPI';
    return {
        kind: 'core',
        message:
            `Tritonsmith is not installed in ${python}. Install it from ${from}? ` +
            'This installs the linter only (pygls, tree-sitter; no PyTorch, no Triton).',
        accept: 'Install',
        command: coreInstallCommand(python, wheel),
    };
}

/** The separate, explained offer of the `[eval]` extra. */
export function evalOffer(python: string, wheel: string | undefined): Offer {
    return {
        kind: 'eval',
        message:
            'Tritonsmith lints your kernels now. Compiling and verifying them on save, and kernel ' +
            `search, need the optional [${TOOL_CONFIG.evalExtra}] extra: PyTorch and Triton, several gigabytes ` +
            `to download. Install it into ${python} too?`,
        accept: 'Install PyTorch and Triton (several GB)',
        command: evalInstallCommand(python, wheel),
    };
}

/** What to do about a state: the offer to show, or a message when no offer can help. */
export function decide(
    state: InstallState,
    python: string,
    wheel: string | undefined,
): { readonly offer?: Offer; readonly problem?: string } {
    switch (state.kind) {
        case 'installed':
            return {};
        case 'missing':
            return { offer: coreOffer(python, wheel) };
        case 'no-python':
            return {
                problem:
                    `Tritonsmith cannot run the Python interpreter '${python}' (${state.detail}). Set ` +
                    '"tritonsmith.interpreter" or select an interpreter with the Python extension.',
            };
    }
}

/** Explains a failed pip run in words a user can act on. */
export function explainPipFailure(result: RunResult, python: string): string {
    const output = `${result.stdout}\n${result.stderr}`;
    if (output.includes('externally-managed-environment')) {
        return (
            `${python} is managed by the operating system (PEP 668), so pip will not install into it. ` +
            'Create a virtual environment and select it with the Python extension or "tritonsmith.interpreter".'
        );
    }
    if (/No module named pip\b/.test(output)) {
        return `${python} has no pip. Install pip there, or choose another interpreter.`;
    }
    return `Installing tritonsmith into ${python} failed (exit code ${result.code}); see the Tritonsmith output.`;
}

/** The user-facing side of the install flow; the extension wires it to vscode.window. */
export interface InstallUi {
    ask(offer: Offer): Promise<boolean>;
    /** Runs pip, streaming its output somewhere visible. */
    run(command: PipCommand, title: string): Promise<RunResult>;
    error(message: string): void;
    info(message: string): void;
}

/**
 * Makes sure the server can start: resolves to true when tritonsmith is importable (already, or
 * after the user accepted the core install). After a successful core install the `[eval]` offer
 * follows on its own; `onEvalInstalled` runs when that one succeeds too.
 */
export async function ensureInstalled(
    state: InstallState,
    python: string,
    wheel: string | undefined,
    ui: InstallUi,
    onEvalInstalled: () => void = () => undefined,
): Promise<boolean> {
    const { offer, problem } = decide(state, python, wheel);
    if (problem) {
        ui.error(problem);
        return false;
    }
    if (!offer) {
        return true;
    }
    if (!(await installWith(offer, python, ui))) {
        return false;
    }
    void offerEval(python, wheel, ui).then((installed) => installed && onEvalInstalled());
    return true;
}

/** Asks about the `[eval]` extra and installs it when accepted. */
export async function offerEval(python: string, wheel: string | undefined, ui: InstallUi): Promise<boolean> {
    return installWith(evalOffer(python, wheel), python, ui);
}

async function installWith(offer: Offer, python: string, ui: InstallUi): Promise<boolean> {
    if (!(await ui.ask(offer))) {
        return false;
    }
    const title = offer.kind === 'core' ? 'Installing tritonsmith' : 'Installing PyTorch and Triton';
    const result = await ui.run(offer.command, title);
    if (result.code !== 0) {
        ui.error(explainPipFailure(result, python));
        return false;
    }
    ui.info(offer.kind === 'core' ? `Tritonsmith is installed in ${python}.` : `PyTorch and Triton are installed in ${python}.`);
    return true;
}

/** Runs pip, sending every line to `log`; `signal` cancels it. */
export function spawnRunner(log: (line: string) => void, signal?: AbortSignal): Runner {
    return (command, args, cwd) =>
        new Promise((resolve) => {
            let stdout = '';
            let stderr = '';
            log(`> ${command} ${args.join(' ')}`);
            const child = spawn(command, [...args], { cwd, windowsHide: true, signal });
            child.stdout.on('data', (chunk: Buffer) => {
                stdout += chunk.toString();
                log(chunk.toString().trimEnd());
            });
            child.stderr.on('data', (chunk: Buffer) => {
                stderr += chunk.toString();
                log(chunk.toString().trimEnd());
            });
            child.on('error', (error: NodeJS.ErrnoException) => resolve({ code: null, stdout, stderr, error }));
            child.on('close', (code) => resolve({ code, stdout, stderr }));
        });
}
