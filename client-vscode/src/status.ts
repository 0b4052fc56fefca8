/** The status bar item: starting, ready, lint only, error, not installed or no Python; a click does what the state needs. */
import * as vscode from 'vscode';
import { TOOL_CONFIG } from './config';

export type ServerState = 'starting' | 'ready' | 'lintOnly' | 'error' | 'notInstalled' | 'noPython' | 'stopped';

export interface StatusView {
    readonly text: string;
    readonly tooltip: string;
    readonly command: string;
    readonly isError: boolean;
}

/** What the item shows for a state; `detail` (interpreter, error) goes into the tooltip. */
export function statusView(state: ServerState, detail?: string): StatusView {
    const name = TOOL_CONFIG.displayName;
    const suffix = detail ? `\n${detail}` : '';
    const show = TOOL_CONFIG.commands.showOutput;
    switch (state) {
        case 'starting':
            return { text: `$(sync~spin) ${name}`, tooltip: `${name}: starting the server${suffix}`, command: show, isError: false };
        case 'ready':
            return { text: `$(check) ${name}`, tooltip: `${name}: ready${suffix}`, command: show, isError: false };
        case 'lintOnly':
            return {
                text: `$(warning) ${name}: lint only`,
                tooltip:
                    `${name}: PyTorch and Triton are not installed in this interpreter, so saving does not compile or ` +
                    `verify and Optimize is off; click to install the [eval] extra${suffix}`,
                command: TOOL_CONFIG.commands.installServer,
                isError: true,
            };
        case 'noPython':
            return {
                text: `$(error) ${name}: no Python`,
                tooltip: `${name}: the Python interpreter cannot run; click to choose one${suffix}`,
                command: TOOL_CONFIG.commands.chooseInterpreter,
                isError: true,
            };
        case 'error':
            return { text: `$(error) ${name}`, tooltip: `${name}: the server failed; click for its output${suffix}`, command: show, isError: true };
        case 'notInstalled':
            return {
                text: `$(warning) ${name}: not installed`,
                tooltip: `${name} is not installed in this interpreter; click to install it${suffix}`,
                command: TOOL_CONFIG.commands.installServer,
                isError: true,
            };
        case 'stopped':
            return { text: `$(circle-slash) ${name}`, tooltip: `${name}: stopped${suffix}`, command: show, isError: false };
    }
}

export class StatusItem implements vscode.Disposable {
    private readonly item: vscode.StatusBarItem;
    state: ServerState = 'stopped';

    constructor() {
        this.item = vscode.window.createStatusBarItem('tritonsmith.status', vscode.StatusBarAlignment.Right, 100);
        this.item.name = TOOL_CONFIG.displayName;
        this.set('starting');
        this.item.show();
    }

    set(state: ServerState, detail?: string): void {
        const view = statusView(state, detail);
        this.state = state;
        this.item.text = view.text;
        this.item.tooltip = view.tooltip;
        this.item.command = view.command;
        this.item.backgroundColor = view.isError ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    }

    dispose(): void {
        this.item.dispose();
    }
}
