// Bundles the extension into dist/extension.js (vscode stays external), or with --tests the unit
// tests into out/unit/*.test.js with `vscode` replaced by the fake in test/unit/fake/vscode.ts.
import * as esbuild from 'esbuild';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const args = new Set(process.argv.slice(2));
const production = args.has('--production');

const common = {
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
    absWorkingDir: root,
};

if (args.has('--tests')) {
    const unit = join(here, 'test', 'unit');
    await esbuild.build({
        ...common,
        entryPoints: readdirSync(unit)
            .filter((name) => name.endsWith('.test.ts'))
            .map((name) => join(unit, name)),
        outdir: join(root, 'out', 'unit'),
        sourcemap: 'inline',
        alias: { vscode: join(unit, 'fake', 'vscode.ts') },
    });
} else {
    await esbuild.build({
        ...common,
        entryPoints: [join(here, 'src', 'extension.ts')],
        outfile: join(root, 'dist', 'extension.js'),
        external: ['vscode'],
        minify: production,
        sourcemap: !production,
    });
}
