/**
 * The console's state as signals, and the actions that change it: sign in/out, the project and
 * environment picked, the environment's flags and segments as the live stream delivers them, the
 * audit log (reloaded after each change the stream reports), and writes with If-Match. Rendering
 * lives in the components; the pure rules live in model.ts.
 */
import { batch, signal } from '@preact/signals';
import { followEnvironment, Session, type CallResult } from './client.js';
import { applyStreamEvent, auditPageRecords, emptyEnv, type EnvData, type Flag, type Segment } from './model.js';

export interface AuditRecord {
  id: number;
  environmentKey?: string;
  actor: string;
  action: 'create' | 'update' | 'delete';
  resource: 'flag' | 'segment';
  resourceKey: string;
  version: number;
  before: unknown;
  after: unknown;
  at: string;
}

export interface EnvInfo {
  key: string;
  sdkKey: string;
}

/** After a stream event, the audit log is reloaded at most this often. */
export const auditReloadMs = 300;

const enc = encodeURIComponent;

export class FlagsStore {
  readonly session = signal<Session | undefined>(undefined);
  readonly signInError = signal('');
  readonly projects = signal<string[]>([]);
  readonly project = signal('');
  readonly environments = signal<EnvInfo[]>([]);
  readonly environment = signal('');
  readonly env = signal<EnvData>(emptyEnv());
  readonly streamState = signal('not connected');
  readonly selectedFlag = signal<string | undefined>(undefined);
  readonly selectedSegment = signal<string | undefined>(undefined);
  readonly audit = signal<AuditRecord[]>([]);
  readonly notice = signal('');
  private stream: { stop: () => void } | undefined;
  private auditTimer: ReturnType<typeof setTimeout> | undefined;

  async signIn(email: string, password: string): Promise<void> {
    this.signInError.value = '';
    const r = await Session.signIn(email, password, (why) => {
      this.signOut();
      this.signInError.value = why;
    });
    if (!r.ok) {
      this.signInError.value = r.error;
      return;
    }
    this.session.value = r.session;
    await this.loadProjects();
  }

  signOut(): void {
    this.stream?.stop();
    this.stream = undefined;
    this.session.value?.end();
    batch(() => {
      this.session.value = undefined;
      this.projects.value = [];
      this.project.value = '';
      this.environments.value = [];
      this.environment.value = '';
      this.env.value = emptyEnv();
      this.audit.value = [];
      this.selectedFlag.value = undefined;
      this.selectedSegment.value = undefined;
      this.streamState.value = 'not connected';
    });
  }

  call<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<CallResult<T>> {
    const s = this.session.value;
    if (!s) return Promise.resolve({ ok: false, status: 401, error: 'not signed in', etag: undefined });
    return s.call<T>(method, path, body, headers);
  }

  get envPath(): string {
    return `/api/v1/projects/${enc(this.project.value)}/environments/${enc(this.environment.value)}`;
  }

  get projectPath(): string {
    return `/api/v1/projects/${enc(this.project.value)}`;
  }

  async loadProjects(): Promise<void> {
    const r = await this.call<Array<{ key: string } | string>>('GET', '/api/v1/projects');
    if (!r.ok) {
      this.notice.value = r.error;
      return;
    }
    const keys = r.body.map((p) => (typeof p === 'string' ? p : p.key));
    this.projects.value = keys;
    if (!keys.includes(this.project.value)) await this.pickProject(keys[0] ?? '');
  }

  async pickProject(p: string): Promise<void> {
    this.project.value = p;
    this.environments.value = [];
    if (p === '') return this.pickEnvironment('');
    const r = await this.call<EnvInfo[]>('GET', `/api/v1/projects/${enc(p)}/environments`);
    if (!r.ok) {
      this.notice.value = r.error;
      return;
    }
    this.environments.value = r.body;
    await this.pickEnvironment(r.body[0]?.key ?? '');
  }

  async pickEnvironment(e: string): Promise<void> {
    this.stream?.stop();
    this.stream = undefined;
    batch(() => {
      this.environment.value = e;
      this.env.value = emptyEnv();
      this.selectedFlag.value = undefined;
      this.selectedSegment.value = undefined;
    });
    const s = this.session.value;
    if (!s || e === '') {
      this.streamState.value = 'not connected';
      return;
    }
    this.stream = followEnvironment(s, this.project.value, e, {
      onEvent: (event, data) => {
        this.env.value = applyStreamEvent(this.env.value, event, data);
        this.scheduleAudit();
      },
      onState: (state, detail) => {
        this.streamState.value = detail ? `${state}: ${detail}` : state;
      },
    });
    await this.loadAudit();
  }

  /** Creates (or opens) a project/environment pair and switches to it. */
  async createEnvironment(p: string, e: string): Promise<string | undefined> {
    const r = await this.call('PUT', `/api/v1/projects/${enc(p)}/environments/${enc(e)}`);
    if (!r.ok) return r.error;
    const r2 = await this.call<Array<{ key: string } | string>>('GET', '/api/v1/projects');
    if (r2.ok) this.projects.value = r2.body.map((x) => (typeof x === 'string' ? x : x.key));
    this.project.value = p;
    const envs = await this.call<EnvInfo[]>('GET', `/api/v1/projects/${enc(p)}/environments`);
    if (envs.ok) this.environments.value = envs.body;
    await this.pickEnvironment(e);
    return undefined;
  }

  private scheduleAudit(): void {
    if (this.auditTimer !== undefined) return;
    this.auditTimer = setTimeout(() => {
      this.auditTimer = undefined;
      void this.loadAudit();
    }, auditReloadMs);
  }

  async loadAudit(): Promise<void> {
    if (this.project.value === '') return;
    const r = await this.call<AuditRecord[]>('GET', `${this.projectPath}/audit?limit=${auditPageRecords}`);
    if (r.ok) this.audit.value = r.body;
  }

  /** PUT of a whole flag with If-Match on the version it was based on. */
  putFlag(flag: Flag, baseVersion: number): Promise<CallResult<Flag>> {
    const { key, version: _v, createdAt: _c, updatedAt: _u, ...def } = flag;
    return this.call<Flag>('PUT', `${this.envPath}/flags/${enc(key)}`, def, { 'if-match': `"${baseVersion}"` });
  }

  putSegment(seg: Segment, baseVersion: number): Promise<CallResult<Segment>> {
    const { key, version: _v, createdAt: _c, updatedAt: _u, ...def } = seg;
    return this.call<Segment>('PUT', `${this.projectPath}/segments/${enc(key)}`, def, {
      'if-match': `"${baseVersion}"`,
    });
  }

  /** The on/off switch: the flag as the page holds it, with `enabled` flipped, If-Match its version. */
  async toggle(key: string): Promise<void> {
    const f = this.env.value.flags.get(key);
    if (!f) return;
    const r = await this.putFlag({ ...f, enabled: !f.enabled }, f.version);
    if (r.ok) {
      this.env.value = applyStreamEvent(
        this.env.value,
        'patch',
        JSON.stringify({ path: `/flags/${key}`, data: r.body }),
      );
      this.notice.value = `${key} is now ${r.body.enabled ? 'on' : 'off'} (version ${r.body.version})`;
    } else if (r.status === 412) {
      this.notice.value =
        `${key} changed elsewhere (now ${r.etag ?? 'newer'}); ` + 'nothing was overwritten: look again and retry';
    } else this.notice.value = `${key}: ${r.error}`;
  }
}
