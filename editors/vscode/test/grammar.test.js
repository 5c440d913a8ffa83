// The TextMate grammar tokenizes pk source as documented: run with
// `npm test` (node's test runner) after `npm install`.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const oniguruma = require('vscode-oniguruma');
const textmate = require('vscode-textmate');

const root = path.join(__dirname, '..');
const repo = path.join(root, '..', '..');

async function grammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new textmate.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (s) => new oniguruma.OnigScanner(s),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () => {
      const file = path.join(root, 'syntaxes', 'pk.tmLanguage.json');
      return textmate.parseRawGrammar(fs.readFileSync(file, 'utf8'), file);
    },
  });
  return registry.loadGrammar('source.pk');
}

/** Every token of `text` as [text, innermost scope]. */
function tokens(g, text) {
  let stack = textmate.INITIAL;
  const out = [];
  for (const line of text.split('\n')) {
    const r = g.tokenizeLine(line, stack);
    for (const t of r.tokens) {
      out.push([line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]]);
    }
    stack = r.ruleStack;
  }
  return out;
}

function scopeOf(toks, text) {
  const t = toks.find(([s]) => s.trim() === text);
  assert.ok(t, `no token ${text}`);
  return t[1];
}

test('a kernel header gets its scopes', async () => {
  const g = await grammar();
  const src = [
    '/// `c = a @ b`.',
    'kernel matmul<M = 1024, T: dtype = bf16>(',
    '    a: T[M, 128] block [bm, 128] at (i, 0),',
    ') -> c: f32[M, 128] block [bm, 128] at (i, 0)',
    'grid (i in M / bm parallel)',
    '{',
    '    let acc = dot(a[..], b[..], trans_b=true) * 0.5; // note',
    '    /* block /* nested */ still */ c[..] = acc;',
    '}',
  ].join('\n');
  const toks = tokens(g, src);
  assert.strictEqual(scopeOf(toks, '/// `c = a @ b`.'), 'comment.line.documentation.pk');
  assert.strictEqual(scopeOf(toks, 'kernel'), 'keyword.declaration.pk');
  assert.strictEqual(scopeOf(toks, 'matmul'), 'entity.name.function.pk');
  assert.strictEqual(scopeOf(toks, 'dtype'), 'storage.type.pk');
  assert.strictEqual(scopeOf(toks, 'bf16'), 'support.type.dtype.pk');
  assert.strictEqual(scopeOf(toks, 'f32'), 'support.type.dtype.pk');
  assert.strictEqual(scopeOf(toks, 'block'), 'keyword.other.clause.pk');
  assert.strictEqual(scopeOf(toks, 'grid'), 'keyword.other.clause.pk');
  assert.strictEqual(scopeOf(toks, 'parallel'), 'keyword.other.semantics.pk');
  assert.strictEqual(scopeOf(toks, 'dot'), 'entity.name.function.call.pk');
  assert.strictEqual(scopeOf(toks, 'true'), 'constant.language.boolean.pk');
  assert.strictEqual(scopeOf(toks, '0.5'), 'constant.numeric.float.pk');
  assert.strictEqual(scopeOf(toks, '1024'), 'constant.numeric.integer.pk');
  assert.strictEqual(scopeOf(toks, '// note'), 'comment.line.double-slash.pk');
  // A nested block comment ends at its own `*/`: `c` after it is code.
  const still = toks.findIndex(([s]) => s.includes('still'));
  assert.ok(still >= 0);
  assert.strictEqual(toks[still][1], 'comment.block.pk');
  const c = toks.slice(still).find(([s]) => s.trim() === 'c');
  assert.ok(c && !c[1].startsWith('comment'), `c after the comment is ${c && c[1]}`);
});

test('`where` is a clause at the start of a line and a call elsewhere', async () => {
  const g = await grammar();
  const toks = tokens(g, 'where bm <= M\n    let y = where(c, a, b);\n    x.at[0] = 1;');
  assert.strictEqual(toks.find(([s]) => s.trim() === 'where')[1], 'keyword.other.clause.pk');
  const call = toks.filter(([s]) => s.trim() === 'where')[1];
  assert.strictEqual(call[1], 'entity.name.function.call.pk');
  assert.ok(!toks.find(([s]) => s.trim() === 'at')[1].startsWith('keyword'), 'x.at[0] is a method');
});

test('every library kernel tokenizes without an invalid scope', async () => {
  const g = await grammar();
  const dir = path.join(repo, 'kernels');
  let n = 0;
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.pk'))) {
    const toks = tokens(g, fs.readFileSync(path.join(dir, f), 'utf8'));
    assert.ok(toks.length > 20, f);
    for (const [text, scope] of toks) {
      assert.ok(!scope.startsWith('invalid'), `${f}: ${text} is ${scope}`);
    }
    // Every kernel name is a function name.
    n += toks.filter(([, s]) => s === 'entity.name.function.pk').length;
  }
  assert.ok(n >= 14, `only ${n} declarations named`);
});
