// Unit tests of the Source view's highlighter (views/source.ts highlightLines), run in Node: the
// module is bundled on the fly with esbuild. The runs of every line must reproduce the file's
// text exactly (line numbers and heat depend on it), whatever the text holds.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadModule } from './harness.mjs';

const { highlightLines } = await loadModule('views/source.ts');

const rejoin = (lines) => lines.map((l) => l.map((s) => s.text).join('')).join('\n');

test('highlightLines: classed runs per line that reproduce the text', () => {
  const text = 'def f(x):\n    """doc\n<script>alert(1)</script>"""\n    return x + 1  # <img src=x onerror=y>\n';
  const lines = highlightLines(text);
  assert.equal(lines.length, 5, 'four lines and the empty one after the last newline');
  assert.equal(rejoin(lines), text);
  assert.deepEqual(lines[0][0], { text: 'def', cls: 'hl-keyword' });
  assert.ok(lines[0].some((s) => s.text === 'f' && s.cls === 'hl-title'), 'function name');
  // A string spanning lines keeps its class on every line it covers.
  assert.deepEqual(lines[2], [{ text: '<script>alert(1)</script>"""', cls: 'hl-string' }]);
  assert.ok(lines[3].some((s) => s.text === '# <img src=x onerror=y>' && s.cls === 'hl-comment'));
});

test('highlightLines: odd input still reproduces the text', () => {
  const cases = [
    '', '\n\n', 'x = "unterminated\ny = 1', "a = '''\n\n'''\r\nb = 2\r\n", '\u0000\uFFFD€ 𝔘 = 1', 'class A:\n\tpass',
    '<b>' .repeat(1000), '"'.repeat(999), `${'x = 1\n'.repeat(30_000)}`,
  ];
  for (const text of cases) assert.equal(rejoin(highlightLines(text)), text, JSON.stringify(text.slice(0, 40)));
  // Past the highlighting caps the text comes back plain, one run per line.
  const big = 'x = 1\n'.repeat(30_000);
  assert.ok(highlightLines(big).every((l) => l.length === 1 && l[0].cls === ''));
});
