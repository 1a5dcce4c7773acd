/**
 * The lab's answers as values: `Outcome<T>` is either the value or a coded error the HTTP edge maps
 * to a status (server.ts keeps that table). It is not an exception type: the lab never throws for
 * a refused request, only for a broken invariant (a bug).
 */

export type LabErrorCode = 'invalid' | 'not_found' | 'conflict';

export interface LabError {
  code: LabErrorCode;
  message: string;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: LabError };

export const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });

export const fail = <T>(code: LabErrorCode, message: string): Outcome<T> => ({ ok: false, error: { code, message } });
