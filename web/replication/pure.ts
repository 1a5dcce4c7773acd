/**
 * A component that redraws only when one of its props changes (compared with ===): for the rows and
 * shapes that the page draws by the dozen (a 64-node cluster's nodes and table rows), whose parents
 * redraw on every model update. Props should be primitives or stable references; it is not a cache
 * of anything else (preact/compat's memo would do the same at the cost of the compat layer).
 */
import { Component, type ComponentType, type JSX } from 'preact';

export function pure<P extends object>(render: (props: P) => JSX.Element | null, name: string): ComponentType<P> {
  class Pure extends Component<P> {
    static override displayName = name;
    override shouldComponentUpdate(next: Readonly<P>, nextState: Readonly<object>): boolean {
      // A redraw asked by the component itself (a signal it read, a hook's state: both setState) goes through.
      if (nextState !== this.state) return true;
      const a = this.props as Record<string, unknown>;
      const b = next as Record<string, unknown>;
      for (const k in b) if (a[k] !== b[k]) return true;
      for (const k in a) if (!(k in b)) return true;
      return false;
    }
    override render(): JSX.Element | null {
      return render(this.props as P);
    }
  }
  return Pure as unknown as ComponentType<P>;
}
