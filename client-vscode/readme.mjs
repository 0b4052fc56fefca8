// The README packaged in the .vsix, with its images inlined as data: URIs.
//
// VS Code's extension page renders an installed extension's README in a webview whose content
// security policy admits images from https: and data: only, so the relative links of
// client-vscode/README.md (images in client-vscode/images/, shipped in the package) show as
// broken images there. Inlined, they load from the package itself, offline too.
//
//   node client-vscode/readme.mjs OUT.md
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2];
if (!out) throw new Error('usage: node client-vscode/readme.mjs OUT.md');
const source = fs.readFileSync(path.join(root, 'client-vscode', 'README.md'), 'utf8');
let inlined = 0;
const text = source.replace(/!\[([^\]]*)\]\((client-vscode\/images\/[^)\s]+\.png)\)/g, (_match, alt, file) => {
  const data = fs.readFileSync(path.join(root, file)).toString('base64');
  inlined += 1;
  return `![${alt}](data:image/png;base64,${data})`;
});
if (/!\[[^\]]*\]\((?!data:|https:)/.test(text)) throw new Error('an image of the README is neither inlined nor https');
fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
fs.writeFileSync(out, text);
console.log(`${out}: ${inlined} images inlined`);
