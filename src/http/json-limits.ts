/**
 * The shape limits every JSON body meets at the edge, before JSON.parse: nesting depth (arrays and
 * objects both count) and the number of array elements plus object members. One pass over the raw
 * bytes that counts brackets and commas outside strings, so a 4,100-level body never reaches a
 * parser, a handler or a store. It does not check that the text is JSON (JSON.parse does that next)
 * and says nothing about string lengths (each service bounds its own fields in its schemas).
 */

/** Deepest nesting of arrays and objects a body may have (`[[1]]` is 2 levels). */
export const jsonNestingDepthMax = 64;
/**
 * Most array elements plus object members a body may hold in all (counted as containers plus
 * commas, an upper bound). A 1 MiB body could otherwise carry over 500,000 (`[0,0,...]`); the
 * largest legitimate bodies (a flag segment with 10,000 included and 10,000 excluded keys) hold
 * about 20,000.
 */
export const jsonValuesMax = 100_000;

/** A valid JSON text nested deeper than jsonNestingDepthMax has at least this many bytes. */
const smallestTooDeepBytes = 2 * (jsonNestingDepthMax + 1);

const quote = 0x22;
const backslash = 0x5c;
const openBracket = 0x5b;
const openBrace = 0x7b;
const closeBracket = 0x5d;
const closeBrace = 0x7d;
const comma = 0x2c;

/**
 * Why a body breaks a shape limit, as a sentence for a 400 `{error}`, or undefined when it keeps
 * them. Bytes inside strings are skipped (an escaped quote does not end a string). Unbalanced or
 * otherwise malformed text is left to JSON.parse.
 */
export function jsonShapeProblem(body: Uint8Array): string | undefined {
  const n = body.length;
  if (n < smallestTooDeepBytes) return undefined;
  let depth = 0;
  let values = 0;
  for (let i = 0; i < n; i++) {
    const c = body[i] as number;
    if (c === quote) {
      const end = stringEnd(body, i);
      if (end < 0) return undefined; // an unterminated string: JSON.parse reports it
      i = end;
    } else if (c === openBracket || c === openBrace) {
      if (++depth > jsonNestingDepthMax)
        return `request body nests arrays and objects deeper than ${jsonNestingDepthMax} levels (jsonNestingDepthMax)`;
      if (++values > jsonValuesMax) return valuesProblem;
    } else if (c === closeBracket || c === closeBrace) {
      depth--;
    } else if (c === comma) {
      if (++values > jsonValuesMax) return valuesProblem;
    }
  }
  return undefined;
}

/**
 * Bytes of a string scanned one by one before switching to Buffer.indexOf (a native call costs more than a
 * short loop).
 */
const shortStringBytes = 32;

/**
 * Index of the quote that closes the string opened at `open`, or -1. Short strings byte by byte
 * (a backslash skips the byte it escapes); long ones from quote to quote, a quote closing the
 * string when an even run of backslashes precedes it.
 */
function stringEnd(body: Uint8Array, open: number): number {
  const n = body.length;
  let j = open + 1;
  const stop = Math.min(n, j + shortStringBytes);
  while (j < stop) {
    const d = body[j] as number;
    if (d === quote) return j;
    j += d === backslash ? 2 : 1;
  }
  for (;;) {
    const q = body.indexOf(quote, j);
    if (q < 0) return -1;
    let k = q - 1;
    while (k > open && body[k] === backslash) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    j = q + 1;
  }
}

const valuesProblem = `request body holds more than ${jsonValuesMax} array elements and object members (jsonValuesMax)`;
