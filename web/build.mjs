// Builds the dashboard into internal/dashboard/dist (committed; embedded by go:embed): one
// minified script, one stylesheet and the early theme script, each named by its content hash, and
// an index.html that loads them by relative paths. Deterministic: the same sources and lockfile
// give the same bytes (CI rebuilds and runs git diff --exit-code). Fails above the size budget of
// docs/api/dashboard.md §4.1.
import { build } from 'esbuild';
import { rmSync, mkdirSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'internal', 'dashboard', 'dist');
const assets = join(out, 'assets');
rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const res = await build({
  entryPoints: { app: join(here, 'src', 'main.jsx'), theme: join(here, 'src', 'theme.js'), style: join(here, 'src', 'style.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: assets,
  legalComments: 'eof',
  charset: 'utf8',
  sourcemap: false,
  metafile: true,
  logLevel: 'warning',
});

const files = readdirSync(assets).sort();
const pick = (prefix, ext) => files.find((f) => f.startsWith(prefix + '-') && f.endsWith(ext));
const app = pick('app', '.js');
const theme = pick('theme', '.js');
const css = pick('style', '.css');
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>queen-go dashboard</title>
<link rel="icon" href="data:,">
<script src="assets/${theme}"></script>
<link rel="stylesheet" href="assets/${css}">
<script type="module" src="assets/${app}"></script>
</head>
<body>
<noscript>The queen-go dashboard needs JavaScript. The API is at api/v1/.</noscript>
<div id="app"></div>
</body>
</html>
`;
writeFileSync(join(out, 'index.html'), html);

let total = 0;
const sizes = {};
for (const f of ['index.html', ...files.map((f) => 'assets/' + f)]) {
  const gz = gzipSync(readFileSync(join(out, f)), { level: 9 }).length;
  sizes[f] = gz;
  total += gz;
}
for (const [f, s] of Object.entries(sizes)) console.log(`${(s / 1024).toFixed(1).padStart(7)} KB gzip  ${basename(f)}`);
console.log(`${(total / 1024).toFixed(1).padStart(7)} KB gzip  total (budget 250 KB; first view 150 KB)`);
if (total > 250 * 1024) {
  console.error('over the size budget of docs/api/dashboard.md §4.1');
  process.exit(1);
}
void res;
