/**
 * Roles and what each may do (../shared/specs/DECISIONS.md "Feature flags" → Auth): viewer < editor < admin;
 * reading needs viewer, creating and replacing editor, deleting admin. Pure lookups, no I/O.
 */
import type { Role } from '../store/types.js';
import type { Method } from '../../http/index.js';
import { unreachable } from '../../util/assert.js';

export type { Role };
export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin'];

function rank(role: Role): number {
  switch (role) {
    case 'viewer':
      return 1;
    case 'editor':
      return 2;
    case 'admin':
      return 3;
    default:
      return unreachable(role);
  }
}

export function isRole(x: unknown): x is Role {
  return typeof x === 'string' && (ROLES as readonly string[]).includes(x);
}

export function roleAtLeast(have: Role, need: Role): boolean {
  return rank(have) >= rank(need);
}

/** The role a method needs: GET viewer, POST/PUT/PATCH editor, DELETE admin. */
export function roleForMethod(method: Method): Role {
  switch (method) {
    case 'GET':
    case 'HEAD':
    case 'OPTIONS':
      return 'viewer';
    case 'POST':
    case 'PUT':
    case 'PATCH':
      return 'editor';
    case 'DELETE':
      return 'admin';
    default:
      return unreachable(method);
  }
}
