// Shared pieces of every page: the fragment router (docs/api/dashboard.md §1), the refresh clock
// (§4.3), data loading with its states (§1), the role gate, dialogs, tables and formatting.
import { createContext } from 'preact';
import { useContext, useEffect, useLayoutEffect, useRef, useState, useCallback } from 'preact/hooks';
import { api, ApiError, emit, on, qs } from './api.js';

// ---- routing ----

/** parseHash reads '#/a/b?x=1' into path segments (decoded one by one) and query keys. */
export function parseHash(h = location.hash) {
  const raw = h.replace(/^#/, '') || '/';
  const i = raw.indexOf('?');
  const p = i < 0 ? raw : raw.slice(0, i);
  const q = i < 0 ? '' : raw.slice(i + 1);
  let segs;
  try {
    segs = p.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    segs = ['\u0000bad'];
  }
  return { segs, query: Object.fromEntries(new URLSearchParams(q)) };
}

/** link builds a fragment link from segments and query keys. */
export function link(segs, query) {
  return '#/' + segs.map(encodeURIComponent).join('/') + qs(query);
}

/** go navigates (a history entry, so back and forward restore the view). */
export function go(segs, query) {
  location.hash = link(segs, query).slice(1);
}

/** setQuery changes query keys of the current view; undefined or '' removes a key. */
export function setQuery(patch) {
  const { segs, query } = parseHash();
  const next = { ...query, ...patch };
  for (const k of Object.keys(next)) if (next[k] === undefined || next[k] === '' || next[k] === null) delete next[k];
  go(segs, next);
}

export function useRoute() {
  const [r, set] = useState(parseHash);
  useEffect(() => {
    const f = () => set(parseHash());
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  return r;
}

// ---- who is calling ----

export const Session = createContext({ level: 'admin', authEnabled: false });
const ORDER = { public: 0, 'read-only': 1, 'read-write': 2, admin: 3 };
export const LEVEL_NAME = { 'read-only': 'read-only', 'read-write': 'read-write', admin: 'admin' };

/** useCan reports whether the caller's level reaches need ('read-only', 'read-write', 'admin'). */
export function useCan(need) {
  const s = useContext(Session);
  return (ORDER[s.level] ?? 0) >= ORDER[need];
}

/** Gate renders its children only for a level that reaches need (§1 "Roles"). */
export function Gate({ need, children }) {
  return useCan(need) ? children : null;
}

// ---- refresh clock ----

const REFRESH_KEY = 'qg.refresh';
export const REFRESH_CHOICES = [0, 2, 5, 15, 60];
let refreshSec = 5;
try {
  const v = Number(localStorage.getItem(REFRESH_KEY));
  if (REFRESH_CHOICES.includes(v) && localStorage.getItem(REFRESH_KEY) !== null) refreshSec = v;
} catch {
  /* default */
}
let tick = 0;
let errors = 0;
let skip = 0;
let timer = null;
export let holdRefresh = 0; // dialogs with unsaved input

export function getRefresh() {
  return refreshSec;
}
export function setRefresh(s) {
  refreshSec = s;
  try {
    localStorage.setItem(REFRESH_KEY, String(s));
  } catch {
    /* not remembered */
  }
  schedule();
  emit('refresh-choice', s);
}
export function hold(delta) {
  holdRefresh += delta;
}
/** refreshNow makes every panel load again at once (after an action). */
export function refreshNow() {
  tick++;
  emit('tick', tick);
}
function schedule() {
  clearInterval(timer);
  if (!refreshSec) return;
  timer = setInterval(() => {
    if (document.hidden || holdRefresh > 0) return;
    const sel = typeof getSelection === 'function' ? String(getSelection() || '') : '';
    if (sel) return; // reading a table: keep it still (as River UI does)
    if (skip > 0) {
      skip--;
      return;
    }
    refreshNow();
  }, refreshSec * 1000);
}
schedule();
on('net', (ok) => {
  // Back off after repeated failures: 1, 2, 4 … 30 s worth of ticks.
  if (ok) {
    errors = 0;
    return;
  }
  errors++;
  skip = Math.min(Math.ceil(Math.min(30, 2 ** (errors - 1)) / Math.max(refreshSec, 1)), 30);
});

export function useTick() {
  const [t, set] = useState(tick);
  useEffect(() => on('tick', set), []);
  return t;
}

/**
 * useData loads fn(signal) now, again when deps change and on every refresh tick; the old data
 * stays while a refresh runs (no layout jump). One request per panel: a newer one aborts it.
 * With after, the first load waits until after is true (once): a page's secondary panels wait
 * for its first data, so on a busy broker they do not compete with it (§4.5's 1 s).
 */
export function useData(fn, deps, { live = true, after = true } = {}) {
  const t = useTick();
  const [st, set] = useState({ data: undefined, error: null, loading: true, slow: false, at: 0 });
  const key = JSON.stringify(deps);
  const last = useRef(key);
  const ready = useRef(false);
  if (after) ready.current = true;
  useEffect(() => {
    if (!ready.current) return undefined;
    const ac = new AbortController();
    const changed = last.current !== key;
    last.current = key;
    set((s) => ({ ...s, loading: true, ...(changed ? { data: undefined, error: null } : {}) }));
    const slow = setTimeout(() => set((s) => ({ ...s, slow: true })), 200);
    fn(ac.signal).then(
      (data) => set({ data, error: null, loading: false, slow: false, at: Date.now() }),
      (error) => {
        if (error && error.name === 'AbortError') return;
        set((s) => ({ ...s, error, loading: false, slow: false }));
      },
    ).finally(() => clearTimeout(slow));
    return () => {
      clearTimeout(slow);
      ac.abort();
    };
  }, [key, live ? t : 0, ready.current]);
  return st;
}

/** get is the usual feed: GET path with query. */
export const get = (path, query) => (signal) => api(path + qs(query), { signal });

// ---- states ----

export function Loading({ rows = 3 }) {
  return (
    <div class="skeleton" aria-busy="true" role="status" aria-label="Loading">
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} class="skel-row" />
      ))}
    </div>
  );
}

/** Pending marks a view's first load (aria-busy) and shows skeleton rows after 200 ms (§1). */
export function Pending({ st }) {
  if (!st || st.data !== undefined || st.error) return null;
  return <div aria-busy="true">{st.slow ? <Loading /> : null}</div>;
}

/** Problem renders an error as §1's state table says. */
export function Problem({ error, notFound }) {
  if (!error) return null;
  if (error.status === 403) {
    const need = (error.body && error.body.required) || '';
    return (
      <p class="alert" role="alert">
        Insufficient permissions{need ? ` (needs ${need})` : ''}: {error.message}
      </p>
    );
  }
  if (error.status === 404 && notFound) return notFound;
  if (error.status === 0) return <p class="alert">Broker unreachable. Showing the last data, if any.</p>;
  return (
    <p class="alert" role="alert">
      {error.status ? `${error.status}: ` : ''}
      {error.message}
    </p>
  );
}

/** Panel wraps a data-fed section: heading, updated time, loading and error states. */
export function Panel({ title, st, children, actions, id, notFound }) {
  const hid = id ? id + '-h' : undefined;
  return (
    <section class="panel" aria-labelledby={hid} id={id} aria-busy={st && st.data === undefined && !st.error ? 'true' : undefined}>
      <div class="panel-head">
        <h2 id={hid}>{title}</h2>
        {st && <Age st={st} />}
        {actions}
      </div>
      {st && st.error && <Problem error={st.error} notFound={notFound} />}
      {st && st.data === undefined && !st.error ? (st.slow ? <Loading /> : null) : children}
    </section>
  );
}

export function Age({ st }) {
  useTick();
  if (!st.at) return null;
  const s = Math.max(0, Math.round((Date.now() - st.at) / 1000));
  return (
    <span class={'age' + (st.error ? ' stale' : '')}>
      {st.error ? 'stale, ' : ''}updated {s} s ago{st.loading && st.data !== undefined ? ' · updating' : ''}
    </span>
  );
}

// ---- formatting ----

let utc = false;
try {
  utc = localStorage.getItem('qg.utc') === '1';
} catch {
  /* local */
}
export function useUTC() {
  const [u, set] = useState(utc);
  useEffect(() => on('utc', set), []);
  return [
    u,
    (v) => {
      utc = v;
      try {
        localStorage.setItem('qg.utc', v ? '1' : '0');
      } catch {
        /* not remembered */
      }
      emit('utc', v);
    },
  ];
}
/** zoneName names the zone timestamps are shown and typed in ("UTC" or "local time"). */
export const zoneName = () => (utc ? 'UTC' : 'local time');

/** toTimeInput formats ts (default: an hour ago) for a datetime-local input in the chosen zone. */
export function toTimeInput(ts) {
  const d = ts ? new Date(ts) : new Date(Date.now() - 3600e3);
  if (utc) return d.toISOString().slice(0, 19);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** fromTimeInput reads a datetime-local value typed in the chosen zone into an ISO timestamp. */
export function fromTimeInput(v) {
  const d = new Date(utc ? v + (v.length === 16 ? ':00Z' : 'Z') : v);
  return isNaN(d) ? v : d.toISOString();
}

/** fmtTime renders a timestamp in the zone chosen in the header (UTC or local, §4.4). */
export function fmtTime(ts, short) {
  if (!ts) return '—';
  const d = new Date(ts);
  if (isNaN(d)) return String(ts);
  if (utc) return d.toISOString().replace('T', ' ').slice(0, short ? 19 : 23) + 'Z';
  const p = (n, w = 2) => String(n).padStart(w, '0');
  const base = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return short ? base : base + '.' + p(d.getMilliseconds(), 3);
}
export function fmtNum(n, digits = 0) {
  if (n === null || n === undefined || n === '') return '—';
  const x = Number(n);
  if (!isFinite(x)) return String(n);
  return x.toLocaleString('en-US', { maximumFractionDigits: digits });
}
export function fmtDur(sec) {
  if (sec === null || sec === undefined) return '—';
  const s = Number(sec);
  if (s < 60) return `${fmtNum(s, 1)} s`;
  if (s < 3600) return `${fmtNum(s / 60, 1)} min`;
  if (s < 86400) return `${fmtNum(s / 3600, 1)} h`;
  return `${fmtNum(s / 86400, 1)} d`;
}
export function fmtBytes(b) {
  if (b === null || b === undefined) return '—';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let x = Number(b);
  while (x >= 1024 && i < u.length - 1) {
    x /= 1024;
    i++;
  }
  return `${fmtNum(x, 1)} ${u[i]}`;
}

// ---- tables ----

/** PAGE_SIZES are the rows-per-page choices of the lists: 100 by default, 1,000 at most (§4.5). */
export const PAGE_SIZES = [50, 100, 200, 500, 1000];

/** pageLimit reads a `limit` URL key: def when missing or malformed, at most 1,000. */
export function pageLimit(v, def = 100) {
  const n = Math.floor(Number(v));
  return n >= 1 ? Math.min(n, 1000) : def;
}

/** PageSize picks the rows per page; the key goes to the URL and the offset restarts. */
export function PageSize({ value, onChange, label = 'Rows per page' }) {
  const opts = PAGE_SIZES.includes(value) ? PAGE_SIZES : [...PAGE_SIZES, value].sort((a, b) => a - b);
  return (
    <Field label={label}>
      <select value={String(value)} onChange={(e) => onChange(+e.currentTarget.value)}>
        {opts.map((l) => (
          <option key={l} value={String(l)}>
            {l}
          </option>
        ))}
      </select>
    </Field>
  );
}

// A table longer than VIRTUAL_AT rows is windowed: it scrolls inside its own box and only WINDOW
// rows (plus two spacer rows) are in the DOM, so a 1,000-row page keeps at most 200 (§4.5).
const VIRTUAL_AT = 200;
const WINDOW = 120;
const LEAD = 40; // rows kept above the first visible one

/**
 * Table renders rows with sortable headers: sort keys go to the URL (sort, order) and the server
 * sorts (M6–M8). cols: [{key, label, sort?, render?, num?}]. onOpen: Enter or click opens a row.
 * Arrow keys, Page Up/Down, Home and End move the focus between rows; in a windowed table they
 * scroll the row in first, and aria-rowcount/aria-rowindex give the full page's positions.
 * resetKey (the page offset) scrolls a windowed table back to its top when it changes.
 */
export function Table({ cols, rows, sort, order, onSort, rowKey, onOpen, caption, empty, select, resetKey }) {
  const box = useRef(null);
  const focusTo = useRef(-1);
  const [rowH, setRowH] = useState(33);
  const [from, setFrom] = useState(0);
  const n = rows ? rows.length : 0;
  const virtual = n > VIRTUAL_AT;
  const first = virtual ? Math.max(0, Math.min(from, n - WINDOW)) : 0;
  const last = virtual ? Math.min(n, first + WINDOW) : n;
  const startFor = (top) => Math.max(0, Math.min(n - WINDOW, Math.floor(top / rowH) - LEAD));
  const onScroll = () => {
    const b = box.current;
    if (!b) return;
    const f = startFor(b.scrollTop);
    // A focused row about to leave the window would take the focus with it: the box keeps it.
    const a = document.activeElement;
    if (a && a.dataset && a.dataset.ri !== undefined && b.contains(a) && (+a.dataset.ri < f || +a.dataset.ri >= f + WINDOW)) b.focus({ preventScroll: true });
    // Re-render only when the window moved by a tenth, not on every pixel.
    if (Math.abs(f - first) >= 10 || (f === 0) !== (first === 0) || (f === n - WINDOW) !== (first === n - WINDOW)) setFrom(f);
  };
  useLayoutEffect(() => {
    const b = box.current;
    if (!virtual || !b) return;
    const r = b.querySelector('tbody tr[data-ri]');
    if (r && r.offsetHeight && Math.abs(r.offsetHeight - rowH) > 0.5) setRowH(r.offsetHeight);
    if (focusTo.current >= 0) {
      const t = b.querySelector(`tbody tr[data-ri="${focusTo.current}"]`);
      if (t) {
        t.focus({ preventScroll: true });
        focusTo.current = -1;
      }
    }
  });
  useEffect(() => {
    // A new page starts at its top (a refresh of the same page keeps the scroll position).
    if (box.current) box.current.scrollTop = 0;
    setFrom(0);
  }, [n, resetKey]);
  if (!rows || rows.length === 0) return <p class="empty">{empty || 'Nothing here yet.'}</p>;
  const moveFocus = (e) => {
    const tr = e.target;
    if (!tr.dataset || tr.dataset.ri === undefined) return;
    const i = +tr.dataset.ri;
    const b = box.current;
    const page = virtual && b ? Math.max(1, Math.floor(b.clientHeight / rowH) - 2) : 10;
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, PageDown: i + page, PageUp: i - page, Home: 0, End: n - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const j = Math.max(0, Math.min(n - 1, to));
    if (!virtual) {
      const t = tr.parentNode.querySelector(`tr[data-ri="${j}"]`);
      if (t) t.focus();
      return;
    }
    const head = b.querySelector('thead').offsetHeight;
    const top = j * rowH;
    if (top < b.scrollTop) b.scrollTop = top;
    else if (top + rowH > b.scrollTop + b.clientHeight - head) b.scrollTop = top + rowH - b.clientHeight + head;
    focusTo.current = j;
    const f = startFor(b.scrollTop);
    if (j >= f && j < f + WINDOW) setFrom(f);
    else setFrom(Math.max(0, Math.min(n - WINDOW, j - LEAD)));
    const t = b.querySelector(`tbody tr[data-ri="${j}"]`);
    if (t) {
      t.focus({ preventScroll: true });
      focusTo.current = -1;
    }
  };
  const span = cols.length + (select ? 1 : 0);
  const spacer = (h, k) =>
    h > 0 ? (
      <tr class="vspace" aria-hidden="true" key={k}>
        <td colSpan={span} ref={(el) => el && (el.style.height = h + 'px')} />
      </tr>
    ) : null;
  return (
    <div
      class={'table-wrap' + (virtual ? ' vwrap' : '')}
      ref={box}
      onScroll={virtual ? onScroll : undefined}
      tabIndex={virtual ? 0 : undefined}
      role={virtual ? 'region' : undefined}
      aria-label={virtual ? `${caption || 'Rows'}: ${n} rows, scrollable` : undefined}
    >
      <table aria-rowcount={virtual ? n + 1 : undefined}>
        {caption && <caption class="sr-only">{caption}</caption>}
        <thead>
          <tr aria-rowindex={virtual ? 1 : undefined}>
            {select && (
              <th scope="col" class="sel">
                <input
                  type="checkbox"
                  aria-label="Select all rows on this page"
                  checked={rows.every((r) => select.has(rowKey(r)))}
                  onChange={(e) => select.setAll(rows.map(rowKey), e.currentTarget.checked)}
                />
              </th>
            )}
            {cols.map((c) => {
              const active = sort && c.sort && sort === c.sort;
              return (
                <th
                  key={c.key}
                  scope="col"
                  class={c.num ? 'num' : ''}
                  aria-sort={active ? (order === 'asc' ? 'ascending' : 'descending') : undefined}
                >
                  {c.sort && onSort ? (
                    <button
                      class="th-sort"
                      onClick={() => onSort(c.sort, active && order !== 'asc' ? 'asc' : active ? 'desc' : c.num ? 'desc' : 'asc')}
                    >
                      {c.label}
                      <span aria-hidden="true">{active ? (order === 'asc' ? ' ▲' : ' ▼') : ''}</span>
                    </button>
                  ) : (
                    c.label
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody onKeyDown={moveFocus}>
          {spacer(first * rowH, 'top')}
          {rows.slice(first, last).map((r, k) => {
            const i = first + k;
            return (
              <tr
                key={rowKey ? rowKey(r) : i}
                data-ri={i}
                aria-rowindex={virtual ? i + 2 : undefined}
                class={onOpen ? 'clickable' : ''}
                tabIndex={onOpen ? 0 : undefined}
                onKeyDown={onOpen ? (e) => e.key === 'Enter' && e.target === e.currentTarget && onOpen(r) : undefined}
                onClick={onOpen ? (e) => !e.target.closest('a,button,input,label') && onOpen(r) : undefined}
              >
                {select && (
                  <td class="sel">
                    <input
                      type="checkbox"
                      aria-label={'Select row ' + (i + 1)}
                      checked={select.has(rowKey(r))}
                      onChange={(e) => select.toggle(rowKey(r), e.currentTarget.checked)}
                    />
                  </td>
                )}
                {cols.map((c) => (
                  <td key={c.key} class={c.num ? 'num' : ''}>
                    {c.render ? c.render(r) : fmtCell(r[c.key], c.num)}
                  </td>
                ))}
              </tr>
            );
          })}
          {spacer((n - last) * rowH, 'bottom')}
        </tbody>
      </table>
    </div>
  );
}
function fmtCell(v, num) {
  if (v === null || v === undefined) return '—';
  if (num) return fmtNum(v, 2);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Pager pages by offset; next is enabled when the page came back full or total says more. */
export function Pager({ offset, limit, count, total, onOffset }) {
  const o = Number(offset) || 0;
  const more = total !== undefined && total !== null ? o + limit < total : count >= limit;
  return (
    <nav class="pager" aria-label="Pages">
      <button disabled={o <= 0} onClick={() => onOffset(Math.max(0, o - limit))}>
        Previous
      </button>
      <span>
        {count ? `${fmtNum(o + 1)}–${fmtNum(o + count)}` : '0'}
        {total !== undefined && total !== null ? ` of ${fmtNum(total)}` : ''}
      </span>
      <button disabled={!more} onClick={() => onOffset(o + limit)}>
        Next
      </button>
    </nav>
  );
}

/** useSelection holds the selected row keys of a table. */
export function useSelection() {
  const [set, setSet] = useState(() => new Set());
  return {
    size: set.size,
    ids: () => [...set],
    has: (k) => set.has(k),
    toggle: (k, on) =>
      setSet((s) => {
        const n = new Set(s);
        on ? n.add(k) : n.delete(k);
        return n;
      }),
    setAll: (ks, on) =>
      setSet((s) => {
        const n = new Set(s);
        for (const k of ks) on ? n.add(k) : n.delete(k);
        return n;
      }),
    clear: () => setSet(new Set()),
  };
}

// ---- dialogs ----

/**
 * Dialog is a modal <dialog>: the browser traps focus and Esc closes it; focus goes back to the
 * element that opened it.
 */
export function Dialog({ title, onClose, children, wide }) {
  const ref = useRef(null);
  // A layout effect: the dialog opens and takes focus before the next keystroke can land elsewhere.
  useLayoutEffect(() => {
    const opener = document.activeElement;
    const d = ref.current;
    if (d && !d.open) d.showModal();
    const first = d && d.querySelector('input,textarea,select,button:not(.dlg-close)');
    if (first) first.focus();
    hold(1);
    return () => {
      hold(-1);
      // Close first: while the modal is open the rest of the page is inert and refuses focus.
      if (d && d.open) d.close();
      if (opener && opener.focus && document.contains(opener)) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class={wide ? 'wide' : ''}
      aria-labelledby="dlg-title"
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <div class="dlg-head">
        <h2 id="dlg-title">{title}</h2>
        <button class="dlg-close icon" aria-label="Close dialog" onClick={onClose}>
          ×
        </button>
      </div>
      {children}
    </dialog>
  );
}

/** announce writes an action's result to the polite live region (§4.4). */
export function announce(text) {
  emit('announce', text);
}

/**
 * Confirm runs a (destructive) action after a dialog that names the object and its effect, then
 * shows the broker's answer or its exact error (§1). typeName: the name to type first.
 */
export function Confirm({ title, effect, confirmLabel = 'Confirm', typeName, run, onClose, children, danger = true }) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [res, setRes] = useState(null);
  const [err, setErr] = useState(null);
  const ok = !typeName || typed === typeName;
  const submit = async (e) => {
    e.preventDefault();
    if (!ok || busy) return;
    setBusy(true);
    setErr(null);
    try {
      const r = await run();
      setRes(r);
      announce(`${title}: done`);
      refreshNow();
    } catch (x) {
      setErr(x);
      announce(`${title}: ${x.message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog title={title} onClose={onClose}>
      <form onSubmit={submit}>
        <p class="effect">{effect}</p>
        {children}
        {typeName && !res && (
          <label class="field">
            Type <code>{typeName}</code> to confirm
            <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
          </label>
        )}
        {err && (
          <p class="alert" role="alert">
            {err.status === 403 ? 'Insufficient permissions: ' : ''}
            {err.message}
          </p>
        )}
        {res && (
          <div class="result" role="status">
            <p>Broker answered:</p>
            <pre class="json">{JSON.stringify(res, null, 2)}</pre>
          </div>
        )}
        <div class="dlg-actions">
          {!res && (
            <button type="submit" class={danger ? 'danger' : 'primary'} disabled={!ok || busy}>
              {busy ? 'Working…' : confirmLabel}
            </button>
          )}
          <button type="button" onClick={onClose}>
            {res ? 'Close' : 'Cancel'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** CopyButton copies text to the clipboard and says so in the live region. */
export function CopyButton({ text, label = 'Copy', what }) {
  return (
    <button
      class="small"
      type="button"
      aria-label={what ? `${label} ${what}` : label}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(typeof text === 'function' ? text() : text);
          announce('Copied');
        } catch {
          announce('Copy refused by the browser');
        }
      }}
    >
      {label}
    </button>
  );
}

/** Field is a labelled input bound to a value. */
export function Field({ label, value, onInput, type = 'text', placeholder, list, id, children, ...rest }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children || (
        <input type={type} value={value ?? ''} placeholder={placeholder} list={list} id={id} onInput={(e) => onInput(e.currentTarget.value)} {...rest} />
      )}
    </label>
  );
}

/** Debounced returns value after it has been still for ms (search waits 250 ms, §4.5). */
export function useDebounced(value, ms = 250) {
  const [v, set] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => set(value), ms);
    return () => clearTimeout(t);
  }, [value]);
  return v;
}

/** SearchBox keeps its text locally and writes the URL key after 250 ms of quiet. */
export function SearchBox({ label, value, onChange, disabled, placeholder }) {
  const [text, setText] = useState(value || '');
  const d = useDebounced(text);
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if ((d || '') !== (value || '')) onChange(d);
  }, [d]);
  useEffect(() => setText(value || ''), [value]);
  return (
    <label class="field">
      <span>{label}</span>
      <input type="search" value={text} disabled={disabled} placeholder={placeholder} onInput={(e) => setText(e.currentTarget.value)} />
    </label>
  );
}

/** useAction wraps a call whose errors show inline. */
export function useAsync() {
  const [st, set] = useState({ busy: false, error: null, result: null });
  const run = useCallback(async (fn) => {
    set({ busy: true, error: null, result: null });
    try {
      const result = await fn();
      set({ busy: false, error: null, result });
      return result;
    } catch (error) {
      set({ busy: false, error, result: null });
      return undefined;
    }
  }, []);
  return [st, run];
}

export { api, ApiError };

/** statusText renders a state as text with an icon, never colour alone (§4.4). */
export function State({ value }) {
  const icon = { Stable: '●', Lagging: '▲', Dead: '✕', healthy: '●', unhealthy: '✕' }[value] || '';
  return (
    <span class={'state st-' + String(value).toLowerCase()}>
      <span aria-hidden="true">{icon} </span>
      {value}
    </span>
  );
}

/** windowRange turns a window key (15m, 1h, 6h, 24h, 7d) or from/to into an ISO range. */
export const WINDOWS = { '15m': 15, '1h': 60, '6h': 360, '24h': 1440, '7d': 10080 };
export function windowRange(q, def = '1h') {
  if (q.from || q.to) return { from: q.from, to: q.to };
  const min = WINDOWS[q.window] || WINDOWS[def];
  const to = new Date();
  return { from: new Date(to - min * 60000).toISOString(), to: to.toISOString() };
}

export function WindowPicker({ q, def = '1h' }) {
  const cur = q.from || q.to ? 'custom' : q.window || def;
  return (
    <div class="segmented" role="group" aria-label="Time window">
      {Object.keys(WINDOWS).map((w) => (
        <button key={w} aria-pressed={cur === w} onClick={() => setQuery({ window: w, from: undefined, to: undefined })}>
          {w}
        </button>
      ))}
    </div>
  );
}
