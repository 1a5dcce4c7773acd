/**
 * A pure function of a short string, remembered: the last `max` answers for inputs of at most
 * `charsMax` characters (the whole memory is dropped when it is full; longer inputs are computed
 * every time, as they rarely repeat and would hold memory). For digests the cores ask for over and
 * over (a version's text, a key's ring position): the answer is the function's, always.
 */
export function shortTextMemo<T>(compute: (s: string) => T, max: number, charsMax: number): (s: string) => T {
  const memo = new Map<string, T>();
  return (s) => {
    if (s.length > charsMax) return compute(s);
    let v = memo.get(s);
    if (v === undefined) {
      v = compute(s);
      if (memo.size >= max) memo.clear();
      memo.set(s, v);
    }
    return v;
  };
}
