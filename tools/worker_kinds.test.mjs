// The worker's kinds (manifest/kinds.js, manifest/kind_registry.js), checked on every build
// (xtask/src/build.rs) and by `node --test tools/`:
// - background.js names no kind (its text, comments included) and imports no kind's file;
// - a kind's wire name is quoted in its own file only: no other file of the worker quotes it;
// - no two kinds claim one name, config field or message type, and none claims a type the
//   core reads or sends;
// - what a kind's file sends to the host is what its kinds declare;
// - every kind the page hook asks about has an adapter for it, and no other kind has one;
// - the registry routes by the declarations alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const manifest = fileURLToPath(new URL('../manifest/', import.meta.url));
const read = (name) => readFileSync(manifest + name, 'utf8');
const load = (name) => import(pathToFileURL(manifest + name).href);

const { KINDS } = await load('kinds.js');
const { checkKinds, createKinds } = await load('kind_registry.js');

// The files kinds.js lists, and which kinds each holds (a file's exports that are kinds).
const kindFiles = [...read('kinds.js').matchAll(/from '\.\/([\w.]+\.js)'/g)].map((m) => m[1]);
const kindsOf = new Map();
for (const file of kindFiles) {
  const exported = Object.values(await load(file));
  kindsOf.set(file, KINDS.filter((k) => exported.includes(k)));
}
const fileOf = (kind) => [...kindsOf].find(([, ks]) => ks.includes(kind))?.[0];
const names = KINDS.map((k) => k.name);
const worker = readdirSync(manifest).filter((f) => f.endsWith('.js'));
const shared = worker.filter((f) => !kindFiles.includes(f) && f !== 'kinds.js');

// A script's string literals and its code with comments, strings and regular expressions
// blanked (a scan, not a parser: enough for these files).
function scan(text) {
  const strings = [];
  let code = '';
  let i = 0;
  // A `/` starts a regular expression where an operand is due: after an operator or a
  // keyword, not after a name, a number or a bracket that closes.
  const operandDue = () => {
    const before = code.trimEnd();
    return before === '' || '(,=:[!&|?{};+-*%<>~^'.includes(before.slice(-1))
      || /\b(?:return|typeof|case|in|of|void|delete|throw|else|do|await|yield)$/.test(before);
  };
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i += 1;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
      code += ' ';
    } else if (c === "'" || c === '"' || c === '`') {
      let s = '';
      i += 1;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\') {
          s += text[i + 1];
          i += 2;
        } else s += text[i++];
      }
      i += 1;
      strings.push(s);
      code += ' "" ';
    } else if (c === '/' && operandDue()) {
      let inClass = false;
      i += 1;
      while (i < text.length && (text[i] !== '/' || inClass)) {
        if (text[i] === '\\') i += 1;
        else if (text[i] === '[') inClass = true;
        else if (text[i] === ']') inClass = false;
        i += 1;
      }
      i += 1;
      code += ' /./ ';
    } else {
      code += c;
      i += 1;
    }
  }
  return { strings, code };
}
const words = (text) => new Set(text.match(/[A-Za-z_$][\w$]*/g) ?? []);
// The message types a script sends (`type: '…'`) and, in background.js, those it reads.
const sent = (text) => new Set([...text.matchAll(/\btype: '(\w+)'/g)].map((m) => m[1]));
const readByBackground = new Set([...read('background.js').matchAll(/msg\.type === '(\w+)'/g)].map((m) => m[1]));

test('background.js names no kind and imports no kind file', () => {
  const text = read('background.js');
  const named = names.filter((n) => words(text).has(n));
  assert.deepEqual(named, [], `background.js names kinds: ${named.join(', ')}`);
  const imported = kindFiles.filter((f) => text.includes(`'./${f}'`));
  assert.deepEqual(imported, [], `background.js imports kind files: ${imported.join(', ')}`);
});

test("a kind's wire name is quoted in its own file only", () => {
  for (const k of KINDS) assert.ok(fileOf(k), `kind ${k.name} is exported by no file kinds.js lists`);
  for (const file of worker) {
    const { strings } = scan(read(file));
    for (const k of KINDS) {
      if (strings.includes(k.name)) assert.equal(file, fileOf(k), `${file} quotes kind ${k.name}, whose file is ${fileOf(k)}`);
    }
  }
  for (const file of worker) {
    const { code } = scan(read(file));
    const open = (code.match(/[{([]/g) ?? []).length;
    assert.equal(open, (code.match(/[})\]]/g) ?? []).length, `the scan misread ${file} (its brackets do not balance)`);
  }
  for (const file of shared) {
    const { code } = scan(read(file));
    const named = names.filter((n) => words(code).has(n));
    assert.deepEqual(named, [], `${file} names kinds in its code: ${named.join(', ')}`);
  }
});

test('no two kinds claim one name, config field or message type; none claims the core\'s', () => {
  const { types } = checkKinds(KINDS);
  const coreSends = new Set(shared.flatMap((f) => [...sent(read(f))]));
  for (const [type, by] of types) {
    assert.ok(!readByBackground.has(type), `kind ${by} claims \`${type}\`, which background.js reads`);
    assert.ok(!coreSends.has(type), `kind ${by} claims \`${type}\`, which the worker's shared files send`);
  }
  const kind = (name, more = {}) => ({ name, create: () => ({}), ...more });
  const tab = (fields) => ({ fields, read: () => null, reset: null });
  const refused = [
    [kind('a'), kind('a')],
    [kind('a', { takes: ['x'] }), kind('b', { takes: ['x'] })],
    [kind('a', { sends: ['x'] }), kind('b', { takes: ['x'] })],
    [kind('a', { sends: ['x'] }), kind('b', { sends: ['x'] })],
    [kind('a', { tab: tab(['f']) }), kind('b', { tab: tab(['f']) })],
    [kind('a', { tab: tab(['rev']) })],
    [kind('a', { tab: { fields: ['f'] } })],
    [kind('A')],
    [{ name: 'a' }],
  ];
  for (const list of refused) assert.throws(() => checkKinds(list), undefined, JSON.stringify(list));
  assert.doesNotThrow(() => checkKinds([kind('a', { takes: ['x'], tab: tab(['f']) }), kind('b', { sends: ['y'], tab: tab(['g']) })]));
});

test('what a kind file sends is what its kinds declare', () => {
  for (const [file, ks] of kindsOf) {
    const declared = new Set(ks.flatMap((k) => k.sends ?? []));
    assert.deepEqual(sent(read(file)), declared, `${file} sends other than its kinds declare`);
  }
});

// A stand-in for the extension API: every member exists and does nothing.
const inert = () => new Proxy(function () {}, { get: (_, p) => (p === 'then' ? undefined : inert()), apply: () => inert() });

test('every kind the page hook asks about has an adapter, and only those', () => {
  const hook = readdirSync(`${manifest}inject`).map((f) => read(`inject/${f}`)).join('\n');
  const asked = new Set([...hook.matchAll(/\b(?:askBrowser|askIfPending)\([^;]*?'(\w+)'/g)].map((m) => m[1]));
  const had = globalThis.chrome;
  globalThis.chrome = inert();
  try {
    const kinds = createKinds(KINDS, { prompts: inert(), holds: inert(), toHost() {}, pilotOn: () => true, ready: new Promise(() => {}), tabKinds() {} });
    assert.deepEqual(new Set(Object.keys(kinds.asks)), asked);
  } finally {
    globalThis.chrome = had;
  }
});

test('the registry routes by the declarations alone', async () => {
  const got = [];
  const sentToHost = [];
  let states;
  const a = {
    name: 'a',
    takes: ['a_do'],
    sends: ['a_done'],
    tab: { fields: ['a_on'], read: ({ a_on, b_on }) => ({ a_on, b_on }), reset: 'none' },
    create(ctx) {
      states = (tabId) => ctx.tab(tabId);
      return {
        request: () => got.push('request a'),
        fromHost: (msg) => got.push(`host ${msg.type}`),
        settled: () => got.push('settled a'),
        applyTab: (tabId, state) => got.push(`apply ${tabId} ${JSON.stringify(state)}`),
        send: (msg) => ctx.toHost(msg),
      };
    },
  };
  const b = { name: 'b', tab: { fields: ['b_on'], read: ({ b_on }) => b_on === true, reset: false }, create: () => ({ settled: () => got.push('settled b') }) };
  const configs = new Map();
  const made = [];
  const kinds = createKinds([a, { ...b, create: (ctx) => { made.push(ctx.name); return b.create(ctx); } }], {
    toHost: (msg) => sentToHost.push(msg.type),
    tabKinds: (tabId) => configs.get(tabId),
  });
  assert.deepEqual(made, ['b']);
  assert.deepEqual(Object.keys(kinds.asks), ['a']);
  assert.equal(kinds.fromHost({ type: 'a_do' }), true);
  assert.equal(kinds.fromHost({ type: 'config' }), false);
  kinds.settled({}, {});
  // A kind reads only the fields it claimed.
  configs.set(7, kinds.fromConfig({ type: 'config', tab_id: 7, a_on: 1, b_on: true }));
  assert.deepEqual(states(7), { a_on: 1, b_on: undefined });
  assert.equal(states(8), 'none');
  await kinds.applyTab(7);
  await kinds.applyTab(8);
  assert.deepEqual(got, ['host a_do', 'settled a', 'settled b', 'apply 7 {"a_on":1}', 'apply 8 "none"']);
  // A kind sends only what it declared.
  const adapter = kinds.asks.a;
  adapter.send({ type: 'a_done' });
  assert.throws(() => adapter.send({ type: 'config_ack' }));
  assert.deepEqual(sentToHost, ['a_done']);
});
