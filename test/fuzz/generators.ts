/**
 * Shared fast-check generators for the hostile-input fuzz suites: hostile JSON values (wrong types,
 * odd numbers, unicode with lone surrogates, NUL and control characters, strings near and past the
 * 1 MiB body cap, nesting at and past the 64-level edge limit up to 10,000 levels, long arrays), body
 * mutations that start from a valid body, raw non-JSON bytes, hostile path segments and query
 * strings. Pure data: nothing here sends a request (harness.ts does), and nothing knows a service.
 */
import fc from 'fast-check';

/** A JSON fragment written into a body verbatim (numbers JSON.stringify cannot spell, deep nesting). */
export class RawJson {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
/** A body value: JSON with RawJson leaves allowed anywhere. */
export type Hostile = null | boolean | number | string | RawJson | Hostile[] | { [k: string]: Hostile };

/** Characters of the huge strings: under the 1 MiB body cap once quoted, over every field's own limit. */
export const hugeStringChars = 900 * 1024;
/** Nesting depth of the deep bodies (the brief: 10,000 levels of arrays). */
export const deepNestingLevels = 10_000;

let hugeCache: string | undefined;
/** A ~900 KB string, built once. */
export function hugeString(): string {
  hugeCache ??= 'x'.repeat(hugeStringChars);
  return hugeCache;
}

/** The adapter's nesting limit (src/http/json-limits.ts): a body may nest this deep, not one level more. */
export const edgeNestingLevels = 64;
/** The adapter's body cap (1 MiB). */
export const bodyCapBytes = 1024 * 1024;
/** The adapter's cap on array elements plus object members in one body. */
export const edgeValuesMax = 100_000;

/**
 * A string that makes `seedText` (a body whose one field is replaced by it) exactly `targetBytes` long
 * (ASCII, so bytes are characters).
 */
export function stringFilling(seedBytes: number, targetBytes: number): string {
  return 'n'.repeat(Math.max(0, targetBytes - seedBytes));
}

/** An array of `n` small numbers, as raw JSON (built once per size). */
const longArrayCache = new Map<number, RawJson>();
export function longArray(n: number): RawJson {
  let a = longArrayCache.get(n);
  if (!a) {
    a = new RawJson(`[${'0,'.repeat(n - 1)}0]`, `an array of ${n} numbers`);
    longArrayCache.set(n, a);
  }
  return a;
}

/** Every C0 control character, DEL and the C1/Unicode line breaks, in one string. */
export const controlChars =
  Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('') + '\u007f\u0085\u2028\u2029';

export const deepArrays = (levels = deepNestingLevels): RawJson =>
  new RawJson('['.repeat(levels) + ']'.repeat(levels), `${levels} nested arrays`);
export const deepObjects = (levels = deepNestingLevels): RawJson =>
  new RawJson('{"a":'.repeat(levels) + '1' + '}'.repeat(levels), `${levels} nested objects`);

/** Numbers at the edges, some only expressible as raw JSON text (parsed to Infinity or -0). */
export const edgeNumbers: Hostile[] = [
  0,
  -1,
  1,
  0.5,
  -0.5,
  64,
  65,
  1e308,
  -1e308,
  5e-324,
  2 ** 31,
  2 ** 53 + 2,
  -(2 ** 63),
  2 ** 64,
  new RawJson('-0', '-0'),
  new RawJson('1e999', '1e999 (Infinity)'),
  new RawJson('-1e999', '-1e999 (-Infinity)'),
  new RawJson('1E400', '1E400'),
  new RawJson('123456789012345678901234567890', '30-digit integer'),
  new RawJson('0.0000000000000000000000000000001', 'tiny decimal'),
];

/** Strings that break naive code: number look-alikes, encodings, traversal, prototype keys, control characters. */
export const edgeStrings: string[] = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e308',
  '0x10',
  '1_000',
  'true',
  'null',
  'undefined',
  '\u0000',
  'a\u0000b',
  controlChars,
  '\u0001\u001b[31m',
  '\uD800',
  '\uDFFF',
  'x\uDBFF',
  '\uFEFF',
  '\u202E',
  '\u2028\u2029',
  '\r\n',
  '\t',
  '😀',
  'e\u0301',
  '\uFFFF',
  '%',
  '%2F',
  '%00',
  '../..',
  '..',
  '.',
  '/',
  '\\',
  '*',
  '?',
  '#',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  "' OR 1=1 --",
  '"; DROP TABLE flags; --',
  '$where',
  '{{7*7}}',
  '${7*7}',
  '<script>alert(1)</script>',
  '(a+)+$',
  '((((((((((a*)*)*)*)*)*)*)*)*)*)*b',
  '[',
  'a'.repeat(1025),
  'é'.repeat(300),
];

/** Keys that poke at prototype handling and object-as-map code. */
export const edgeKeys: string[] = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '',
  ' ',
  '\u0000',
  'a.b',
  'a/b',
  '..',
  '😀',
  'x'.repeat(300),
];

/** UTF-16 strings of any code unit, so lone surrogates and NUL come up. */
export const utf16String = (maxLength = 40): fc.Arbitrary<string> =>
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength });

const anyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...edgeStrings) },
  { weight: 2, arbitrary: utf16String() },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.nat({ max: 70_000 }).map((n) => 'y'.repeat(n)) },
);

const anyNumber: fc.Arbitrary<Hostile> = fc.oneof(
  fc.constantFrom(...edgeNumbers),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Large and deep values: costly, so rare in random runs (the fixed corpus sends each once per endpoint). */
const bigValue: fc.Arbitrary<Hostile> = fc
  .constantFrom<() => Hostile>(
    () => hugeString(),
    () => deepArrays(),
    () => deepObjects(),
    () => deepArrays(200),
    () => deepArrays(edgeNestingLevels + 1),
    () => deepObjects(edgeNestingLevels),
    () => deepObjects(5000),
    () => Array.from({ length: 5000 }, (_, i) => i),
    () => longArray(edgeValuesMax + 1),
    () => controlChars,
  )
  .map((f) => f());

/** Any hostile JSON value. */
export const hostileValue: fc.Arbitrary<Hostile> = fc.letrec<{ value: Hostile }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: fc.constantFrom<Hostile>(null, true, false, 0, '', [], {}, 'x', [null], { '': null }) },
    { weight: 4, arbitrary: anyNumber },
    { weight: 5, arbitrary: anyString },
    { weight: 1, arbitrary: bigValue },
    { weight: 2, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    {
      weight: 2,
      arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...edgeKeys), fc.string({ maxLength: 8 })), tie('value'), {
        maxKeys: 4,
      }),
    },
  ),
})).value;

// ---- body mutations ------------------------------------------------------------------------

/** One edit of a valid body; `at` picks a node of the body tree (modulo their number). */
export type Mutation =
  | { op: 'replace'; at: number; value: Hostile }
  | { op: 'delete'; at: number }
  | { op: 'add'; at: number; key: string; value: Hostile }
  | { op: 'wrap'; at: number; how: 'array' | 'object' | 'string' };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('replace' as const), at: fc.nat(), value: hostileValue }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), at: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('add' as const),
      at: fc.nat(),
      key: fc.oneof(fc.constantFrom(...edgeKeys), fc.string({ maxLength: 10 })),
      value: hostileValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('wrap' as const),
      at: fc.nat(),
      how: fc.constantFrom('array' as const, 'object' as const, 'string' as const),
    }),
  },
);

type PathStep = string | number;

function isContainer(v: Hostile): v is Hostile[] | { [k: string]: Hostile } {
  return v !== null && typeof v === 'object' && !(v instanceof RawJson);
}

/** Every node of the tree, root first (depth-first), as paths of keys and indices. */
function nodePaths(v: Hostile, prefix: PathStep[] = [], out: PathStep[][] = []): PathStep[][] {
  out.push(prefix);
  if (Array.isArray(v)) v.forEach((c, i) => nodePaths(c, [...prefix, i], out));
  else if (isContainer(v)) for (const k of Object.keys(v)) nodePaths(v[k] as Hostile, [...prefix, k], out);
  return out;
}

function clone(v: Hostile): Hostile {
  if (Array.isArray(v)) return v.map(clone);
  if (isContainer(v)) {
    const o: { [k: string]: Hostile } = {};
    for (const k of Object.keys(v))
      Object.defineProperty(o, k, {
        value: clone(v[k] as Hostile),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return o;
  }
  return v;
}

function getAt(root: Hostile, path: PathStep[]): Hostile {
  let cur: Hostile = root;
  for (const s of path) cur = (cur as Record<string, Hostile>)[s as string] as Hostile;
  return cur;
}

/** Sets a property as an own data property (so "__proto__" stays a key, as JSON.parse makes it). */
function setOwn(target: Hostile[] | { [k: string]: Hostile }, key: PathStep, value: Hostile): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Applies the edits to a copy of `seed`; the root itself can be replaced or wrapped. */
export function applyMutations(seed: Hostile, mutations: readonly Mutation[]): Hostile {
  let root = clone(seed);
  for (const m of mutations) {
    const paths = nodePaths(root);
    const path = paths[m.at % paths.length] as PathStep[];
    const node = getAt(root, path);
    const replaceWith = (value: Hostile): void => {
      if (path.length === 0) {
        root = value;
        return;
      }
      const parent = getAt(root, path.slice(0, -1)) as Hostile[] | { [k: string]: Hostile };
      setOwn(parent, path[path.length - 1] as PathStep, value);
    };
    // Values are copied in: generated constants ([] and {} from constantFrom) are shared between cases.
    switch (m.op) {
      case 'replace':
        replaceWith(clone(m.value));
        break;
      case 'delete': {
        if (path.length === 0) {
          root = {};
          break;
        }
        const parent = getAt(root, path.slice(0, -1)) as Hostile[] | { [k: string]: Hostile };
        const last = path[path.length - 1] as PathStep;
        if (Array.isArray(parent)) parent.splice(last as number, 1);
        else delete parent[last as string];
        break;
      }
      case 'add': {
        const value = clone(m.value);
        if (Array.isArray(node)) node.push(value);
        else if (isContainer(node)) setOwn(node, m.key, value);
        else
          replaceWith(
            Object.defineProperty({}, m.key, { value, enumerable: true, writable: true, configurable: true }),
          );
        break;
      }
      case 'wrap':
        replaceWith(m.how === 'array' ? [node] : m.how === 'object' ? { value: node } : serialize(node));
        break;
      default: {
        const never: never = m;
        throw new Error(`unknown mutation ${JSON.stringify(never)}`);
      }
    }
  }
  return root;
}

/** JSON text of a hostile value (RawJson verbatim; lone surrogates escaped as JSON.stringify does). */
export function serialize(v: Hostile): string {
  if (v instanceof RawJson) return v.text;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (isContainer(v))
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${serialize(v[k] as Hostile)}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

// ---- whole bodies ----------------------------------------------------------------------------

/** How the body of one request is made. */
export type BodyRecipe =
  | { kind: 'valid' }
  | { kind: 'none' }
  | { kind: 'mutated'; mutations: Mutation[] }
  | { kind: 'json'; value: Hostile }
  | { kind: 'raw'; bytes: Uint8Array; label: string };

/** Byte sequences that are not (quite) JSON. */
export const rawBodies: Array<{ label: string; bytes: Uint8Array }> = [
  ['truncated object', '{"a":'],
  ['trailing garbage', '{} x'],
  ['two documents', '{}{}'],
  ['single quotes', "{'a':1}"],
  ['comment', '/* c */ {}'],
  ['NaN literal', '{"a": NaN}'],
  ['undefined literal', 'undefined'],
  ['bare word', 'hello'],
  ['null', 'null'],
  ['a string', '"x"'],
  ['a number', '12'],
  ['true', 'true'],
  ['empty array', '[]'],
  ['whitespace only', ' \n\t '],
  ['duplicate keys', '{"a":1,"a":{"b":2}}'],
  ['__proto__ key', '{"__proto__":{"polluted":true,"role":"admin"}}'],
  ['constructor.prototype', '{"constructor":{"prototype":{"polluted":true}}}'],
  ['escaped lone surrogate', '{"a":"\\ud800"}'],
  ['escaped NUL', '{"a":"\\u0000"}'],
]
  .map(([label, text]) => ({ label: label as string, bytes: Buffer.from(text as string, 'utf8') }))
  .concat([
    { label: 'UTF-8 BOM then {}', bytes: Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]) },
    {
      label: 'invalid UTF-8 in a string',
      bytes: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xff, 0x22, 0x7d]),
    },
    { label: 'raw NUL bytes', bytes: Buffer.from([0, 0, 0, 0]) },
    { label: 'gzip magic', bytes: Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00]) },
    { label: 'UTF-16LE {}', bytes: Buffer.from('{}', 'utf16le') },
  ]);

export const bodyRecipeArb: fc.Arbitrary<BodyRecipe> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('mutated' as const),
      mutations: fc.array(mutationArb, { minLength: 1, maxLength: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('json' as const), value: hostileValue }) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constantFrom(...rawBodies).map((r) => ({ kind: 'raw' as const, bytes: r.bytes, label: r.label })),
      fc.uint8Array({ maxLength: 512 }).map((bytes) => ({ kind: 'raw' as const, bytes, label: 'random bytes' })),
    ),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
);

// ---- paths, queries, headers, methods --------------------------------------------------------

/** A path segment as sent on the wire (already percent-encoded, or deliberately mis-encoded). */
export const hostileSegments: string[] = [
  '%2F',
  'a%2Fb',
  '..',
  '%2e%2e',
  '%2E%2E',
  '.',
  '%2e',
  '..%2F..%2Fetc%2Fpasswd',
  '%2e%2e%2f',
  '%5C',
  '%00',
  'a%00b',
  '%',
  '%zz',
  '%E0%A4%A',
  '%ED%A0%80',
  '%C0%AF',
  '%F0%9F%98%80',
  '%FF%FE',
  '%20',
  '+',
  ';',
  ';a=b',
  '%3F',
  '%23',
  '*',
  '~',
  '__proto__',
  'constructor',
  'toString',
  'a'.repeat(5000),
  'x'.repeat(129),
  'a'.repeat(65),
  'A',
  '-',
  '_',
  '0',
  '-1',
  '1e308',
  // Not percent-encoded: Latin-1 bytes (invalid UTF-8 on the wire), characters URLs must escape, raw UTF-8.
  '\u00e9',
  '\u00ff\u00fe',
  '"',
  '<x>',
  '{}',
  '|',
  '^',
  '`',
  '\\',
  '\u00e9\u00e9/..',
  'caf\u00e9',
  'p\u00e9\u{1F600}',
  '\u{1F600}',
];

/** Percent-encodes every UTF-8 byte that is not unreserved (lone surrogates become U+FFFD). */
export function encodeSegment(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export const segmentArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...hostileSegments) },
  { weight: 2, arbitrary: utf16String(20).map(encodeSegment) },
  { weight: 1, arbitrary: fc.nat({ max: 10_000 }).map((n) => 'i'.repeat(n + 1)) },
);

/** What happens to the path: which parameter is replaced, and what is appended. */
export interface PathRecipe {
  /** Replaces parameter number `index % paramCount`, if the path has any. */
  replace: { index: number; segment: string } | undefined;
  /** Appended after the path ('' most of the time). */
  tail: string;
}

export const pathTails = ['', '/', '//', '/..', '/%2e%2e', '/x', '/./', '%2F', '/..%2F..%2F'];

export const pathRecipeArb: fc.Arbitrary<PathRecipe> = fc.record({
  replace: fc.option(fc.record({ index: fc.nat(), segment: segmentArb }), { nil: undefined }),
  tail: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...pathTails) }),
});

/** Raw query fragments: repeated keys, empty names, bad percent escapes, prototype names. */
export const oddQueryParts = [
  '&',
  '&&&',
  '=',
  '==',
  '=x',
  'a',
  'a=',
  'a=%',
  'a=%zz',
  'a=%ED%A0%80',
  'a=%00',
  'a=+%2B+',
  'a[]=1',
  'a[b]=1',
  '__proto__=1',
  'constructor=1',
  'toString=1',
  `a=${'q'.repeat(4000)}`,
  'a=%F0%9F%98%80',
  'a=1;b=2',
  '%3D=%26',
];

/** How the query string is made from the endpoint's valid pairs. */
export interface QueryRecipe {
  /** Each valid key: kept, dropped, repeated with hostile values, or given a hostile value. */
  perKey: Array<{ how: 'keep' | 'drop' | 'repeat' | 'replace'; values: string[] }>;
  /** Raw parts appended. */
  extra: string[];
}

const queryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...edgeStrings).map(encodeSegment),
  fc.constantFrom('%', '%zz', '%ED%A0%80', '+', '0', '-1', '1.5', 'true', '1e999', 'NaN'),
  utf16String(12).map(encodeSegment),
);

export const queryRecipeArb: fc.Arbitrary<QueryRecipe> = fc.record({
  perKey: fc.array(
    fc.record({
      how: fc.constantFrom('keep' as const, 'drop' as const, 'repeat' as const, 'replace' as const),
      values: fc.array(queryValue, { minLength: 1, maxLength: 3 }),
    }),
    { maxLength: 4 },
  ),
  extra: fc.array(
    fc.oneof(
      fc.constantFrom(...oddQueryParts),
      fc.tuple(utf16String(6), utf16String(6)).map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(v)}`),
    ),
    { maxLength: 3 },
  ),
});

/** Renders the query: the valid pairs edited by the recipe, then the raw extras. */
export function renderQuery(valid: ReadonlyArray<readonly [string, string]>, recipe: QueryRecipe | undefined): string {
  const parts: string[] = [];
  valid.forEach(([k, v], i) => {
    const r = recipe?.perKey[i];
    const ek = encodeSegment(k);
    if (!r || r.how === 'keep') parts.push(`${ek}=${encodeSegment(v)}`);
    else if (r.how === 'repeat') {
      parts.push(`${ek}=${encodeSegment(v)}`);
      for (const x of r.values) parts.push(`${ek}=${x}`);
    } else if (r.how === 'replace') parts.push(`${ek}=${r.values[0] ?? ''}`);
  });
  if (recipe) parts.push(...recipe.extra);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** Content-Type values a client might send (undefined: none at all). */
export const contentTypes: Array<string | undefined> = [
  'application/json',
  undefined,
  'text/plain',
  'application/json; charset=iso-8859-1',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '*/*',
  'application/json, text/plain',
  'APPLICATION/JSON',
];

/** Methods besides the endpoint's own. HEAD is included; harness.ts decides what a HEAD answer may look like. */
export const otherMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'FOO'];
