// The shell of every page (docs/api/dashboard.md §1): navigation, header (jump box, refresh,
// theme, auth chip), banners, the token dialog (§4.2), the palette and shortcuts (§4.4), routing.
import { render } from 'preact';
import { useEffect, useState, useRef } from 'preact/hooks';
import { api, auth, on, qs } from './api.js';
import {
  useRoute, Session, REFRESH_CHOICES, useUTC, getRefresh, setRefresh, useData, get, Dialog, link, go, refreshNow, fmtTime, CopyButton,
} from './lib.jsx';
import { Overview, Queues, QueueDetail } from './overview.jsx';
import { Messages, MessageDetail, DeadLetters, Groups, GroupDetail, Traces, TraceTimeline } from './data.jsx';
import { Analytics, System } from './ops.jsx';

const NAV = [
  ['', 'Overview'],
  ['queues', 'Queues'],
  ['messages', 'Messages'],
  ['dlq', 'Dead letters'],
  ['groups', 'Consumer groups'],
  ['traces', 'Traces'],
  ['analytics', 'Analytics'],
  ['system', 'System'],
];

function View({ segs, query }) {
  const [a, b, c] = segs;
  if (segs.length === 0) return <Overview q={query} />;
  if (a === 'queues' && segs.length === 1) return <Queues q={query} />;
  if (a === 'queues' && segs.length === 2) return <QueueDetail name={b} q={query} key={b} />;
  if (a === 'messages' && segs.length === 1) return <Messages q={query} />;
  if (a === 'messages' && segs.length === 3) return <MessageDetail pid={b} txn={c} key={b + c} />;
  if (a === 'dlq' && segs.length === 1) return <DeadLetters q={query} />;
  if (a === 'groups' && segs.length === 1) return <Groups q={query} />;
  if (a === 'groups' && segs.length === 2) return <GroupDetail name={b} q={query} key={b} />;
  if (a === 'traces' && segs.length === 1) return <Traces q={query} />;
  if (a === 'traces' && segs.length === 2) return <TraceTimeline name={b} q={query} key={b} />;
  if (a === 'analytics' && segs.length === 1) return <Analytics q={query} />;
  if (a === 'system' && segs.length === 1) return <System q={query} />;
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no view at <code>{location.hash}</code>. <a href="#/">Go to the overview</a>.
      </p>
    </>
  );
}

// ---- theme ----

function useTheme() {
  const [choice, set] = useState(() => {
    try {
      return localStorage.getItem('qg.theme') || 'system';
    } catch {
      return 'system';
    }
  });
  useEffect(() => {
    try {
      if (choice === 'system') localStorage.removeItem('qg.theme');
      else localStorage.setItem('qg.theme', choice);
    } catch {
      /* not remembered */
    }
    const mq = matchMedia('(prefers-color-scheme: dark)');
    const apply = () => (document.documentElement.dataset.theme = choice === 'system' ? (mq.matches ? 'dark' : 'light') : choice);
    apply();
    mq.addEventListener('change', apply);
    return () => mq.removeEventListener('change', apply);
  }, [choice]);
  return [choice, set];
}

// ---- who am I ----

function useWhoAmI() {
  const [me, setMe] = useState({ authEnabled: false, authenticated: false, level: 'admin', known: false });
  const [ver, setVer] = useState(0);
  useEffect(() => on('changed', () => setVer((v) => v + 1)), []);
  useEffect(() => {
    let stop = false;
    api('api/v1/auth/me').then(
      (m) => !stop && setMe({ ...m, known: true }),
      (e) => {
        if (stop) return;
        if (e.status === 401) setMe({ authEnabled: true, authenticated: false, level: 'public', known: true, error: e.message });
        else if (e.status === 404)
          // A broker without M1: a kept token means auth is on (level unknown, every control shows).
          setMe({ authEnabled: !!auth.token, authenticated: !!auth.token, level: 'admin', known: false });
      },
    );
    return () => (stop = true);
  }, [ver]);
  return me;
}

function TokenDialog({ onClose, reason }) {
  const [t, setT] = useState('');
  const [remember, setRemember] = useState(auth.remembered());
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      let m;
      try {
        m = await api('api/v1/auth/me', { tokenOverride: t.trim() });
      } catch (x) {
        if (x.status !== 404) throw x;
        // A broker without GET /api/v1/auth/me (M1): check the token on a read-only route; the
        // level stays unknown, so every control shows and a 403 is handled where it happens.
        await api('api/v1/resources/overview', { tokenOverride: t.trim() });
        m = { authEnabled: true, authenticated: true, level: 'admin' };
      }
      if (m.authEnabled && !m.authenticated) throw new Error('The broker did not accept a token');
      auth.set(t.trim(), remember);
      onClose(m);
      refreshNow();
    } catch (x) {
      setErr(x.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog title="Sign in with a token" onClose={() => onClose(null)}>
      <form onSubmit={submit}>
        {reason && <p class="alert">{reason}</p>}
        <p>Authentication is on. Paste a JWT; it is sent only as an Authorization header to this broker.</p>
        <label class="field">
          <span>Token (JWT)</span>
          <textarea rows="4" value={t} onInput={(e) => setT(e.currentTarget.value)} autocomplete="off" spellcheck={false} required />
        </label>
        <label class="check">
          <input type="checkbox" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} /> Remember on this browser
        </label>
        {err && (
          <p class="alert" role="alert">
            {err}
          </p>
        )}
        <div class="dlg-actions">
          <button type="submit" class="primary" disabled={busy || !t.trim()}>
            Use token
          </button>
          {auth.token && (
            <button
              type="button"
              onClick={() => {
                auth.forget();
                onClose(null);
              }}
            >
              Forget token
            </button>
          )}
          <button type="button" onClick={() => onClose(null)}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

// ---- palette ----

function Palette({ onClose }) {
  const [text, setText] = useState('');
  const [res, setRes] = useState({ queues: [], groups: [], traces: [] });
  const [err, setErr] = useState(null);
  useEffect(() => {
    const s = text.trim();
    if (!s) return setRes({ queues: [], groups: [], traces: [] });
    const ac = new AbortController();
    const t = setTimeout(async () => {
      const one = (p) => api(p, { signal: ac.signal }).catch((e) => (e.name === 'AbortError' ? null : (setErr(e.message), null)));
      const [qs1, gs, ts] = await Promise.all([
        one('api/v1/status/queues' + qs({ search: s, limit: 8 })),
        one('api/v1/consumer-groups' + qs({ search: s, limit: 8 })),
        one('api/v1/traces/names' + qs({ search: s, limit: 8 })),
      ]);
      if (ac.signal.aborted) return;
      setRes({
        queues: (qs1 && qs1.queues) || [],
        groups: [...new Set((gs || []).map((g) => g.name))],
        traces: ((ts && ts.trace_names) || []).map((t) => t.trace_name),
      });
    }, 250);
    return () => (clearTimeout(t), ac.abort());
  }, [text]);
  const s = text.trim();
  const pages = NAV.filter(([, l]) => s && l.toLowerCase().includes(s.toLowerCase()));
  const idMatch = /^([0-9a-f-]{36})\/(.+)$/i.exec(s);
  const items = [
    ...pages.map(([p, l]) => ({ label: 'Page: ' + l, href: '#/' + p })),
    ...(idMatch ? [{ label: 'Open message ' + idMatch[2], href: link(['messages', idMatch[1], idMatch[2]]) }] : []),
    ...(s && !idMatch ? [{ label: 'Find message with transaction ID ' + s, href: link(['messages'], { transactionId: s }) }] : []),
    ...res.queues.map((q) => ({ label: 'Queue: ' + q.name, href: link(['queues', q.name]) })),
    ...res.groups.map((g) => ({ label: 'Group: ' + g, href: link(['groups', g]) })),
    ...res.traces.map((t) => ({ label: 'Trace: ' + t, href: link(['traces', t]) })),
  ];
  const open = (href) => {
    onClose();
    location.hash = href.slice(1);
  };
  return (
    <Dialog title="Jump to" onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (items[0]) open(items[0].href);
        }}
      >
        <label class="field">
          <span>Page, queue, group, trace name, or a transaction ID</span>
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} aria-controls="palette-list" autocomplete="off" />
        </label>
      </form>
      {err && <p class="alert">{err}</p>}
      <ul id="palette-list" class="palette">
        {items.slice(0, 30).map((i) => (
          <li key={i.href}>
            <a
              href={i.href}
              onClick={(e) => {
                e.preventDefault();
                open(i.href);
              }}
            >
              {i.label}
            </a>
          </li>
        ))}
      </ul>
    </Dialog>
  );
}

function Shortcuts({ onClose }) {
  return (
    <Dialog title="Keyboard shortcuts" onClose={onClose}>
      <dl class="facts">
        <dt>
          <kbd>/</kbd> or <kbd>Ctrl</kbd>+<kbd>K</kbd>
        </dt>
        <dd>Jump to a page, queue, group, trace or message</dd>
        <dt>
          <kbd>?</kbd>
        </dt>
        <dd>This list</dd>
        <dt>
          <kbd>Esc</kbd>
        </dt>
        <dd>Close the dialog</dd>
        <dt>
          <kbd>Enter</kbd>
        </dt>
        <dd>Open the focused table row</dd>
        <dt>Arrows</dt>
        <dd>Move through the lag heatmap</dd>
        <dt>
          <kbd>g</kbd> then a digit 1–8
        </dt>
        <dd>Go to a page of the navigation</dd>
      </dl>
    </Dialog>
  );
}

// ---- banners ----

function Banners({ me, expiring, onRenew }) {
  const health = useData(get('health'), ['banner-health']);
  const [down, setDown] = useState(false);
  useEffect(() => on('net', (ok) => setDown(!ok)), []);
  const h = (health.error && health.error.body && typeof health.error.body === 'object' ? health.error.body : null) || health.data || null;
  const out = [];
  if (down || (health.error && health.error.status === 0)) out.push(['error', 'Broker unreachable: showing the last data; retrying with back-off.']);
  if (h && h.database && h.database !== 'connected') out.push(['error', 'Database unavailable: reads fail and pushes go to the spool.']);
  if (h && h.maintenanceMode) out.push(['warn', 'Push maintenance is on: every push goes to the spool.']);
  if (h && h.popMaintenanceMode) out.push(['warn', 'Pop maintenance is on: every pop answers empty.']);
  if (h && h.fileBuffer && h.fileBuffer.pending > 0) out.push(['info', `${h.fileBuffer.pending} spooled messages are draining into the database.`]);
  return (
    <div class="banners">
      {out.map(([kind, text]) => (
        <p key={text} class={'banner ' + kind} role={kind === 'error' ? 'alert' : undefined}>
          {text}
        </p>
      ))}
      {expiring && (
        <p class="banner warn token-expiry" role="alert">
          Your token expires at {fmtTime(me.expiresAt, true)}: paste a new one to keep working.{' '}
          <button class="small" onClick={onRenew}>
            Paste a new token…
          </button>
        </p>
      )}
    </div>
  );
}

// ---- app ----

function App() {
  const route = useRoute();
  const [theme, setTheme] = useTheme();
  // One setting for every timestamp of every page (§4.4): changing it re-renders the whole tree.
  const [utc, setUtc] = useUTC();
  const me = useWhoAmI();
  const [tokenDlg, setTokenDlg] = useState(null);
  const [palette, setPalette] = useState(false);
  const [help, setHelp] = useState(false);
  const [refresh, setRef] = useState(getRefresh());
  const [live, setLive] = useState('');
  const [menu, setMenu] = useState(false);
  const main = useRef(null);
  useEffect(() => on('announce', (t) => setLive(t + ' ')), []);
  useEffect(() => on('unauthorized', (msg) => setTokenDlg(msg || 'Authentication required')), []);
  useEffect(() => {
    if (me.known && me.authEnabled && !me.authenticated && !auth.token) setTokenDlg('Authentication required');
  }, [me.known, me.authEnabled, me.authenticated]);
  // Token expiry (§4.2): a banner from 60 s before exp; at exp the token dialog opens (the view stays).
  const [expiring, setExpiring] = useState(false);
  useEffect(() => {
    const exp = me.expiresAt ? new Date(me.expiresAt).getTime() : NaN;
    const left = exp - Date.now();
    setExpiring(left < 60000);
    // setTimeout takes at most 2^31-1 ms; a token valid for weeks needs no timer yet.
    if (!(left < 2e9)) return setExpiring(false);
    const warn = setTimeout(() => setExpiring(true), Math.max(0, left - 60000));
    const over = setTimeout(() => setTokenDlg('Token has expired'), Math.max(0, left));
    return () => (clearTimeout(warn), clearTimeout(over));
  }, [me.expiresAt]);
  useEffect(() => {
    // Move focus to the new page's heading, as a screen reader user expects after navigation.
    const h = main.current && main.current.querySelector('h1');
    if (h && document.activeElement === document.body) h.focus();
    setMenu(false);
  }, [route.segs.join('/')]);
  useEffect(() => {
    let g = false;
    const key = (e) => {
      const t = e.target;
      const typing = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        setPalette(true);
        return;
      }
      if (typing || document.querySelector('dialog[open]')) return;
      if (e.key === '/') {
        e.preventDefault();
        setPalette(true);
      } else if (e.key === '?') {
        setHelp(true);
      } else if (e.key === 'g') {
        g = true;
        setTimeout(() => (g = false), 1500);
      } else if (g && /^[1-8]$/.test(e.key)) {
        g = false;
        location.hash = '#/' + NAV[+e.key - 1][0];
      }
    };
    addEventListener('keydown', key);
    return () => removeEventListener('keydown', key);
  }, []);
  const cur = route.segs[0] || '';
  const chip = !me.authEnabled ? 'auth off' : me.authenticated ? `${me.sub || 'token'} · ${me.level}` : 'not signed in';
  // The caller's tenant (docs/api/concepts.md §14): a token of the default tenant (and a broker
  // without authentication) shows none, the operator role reads every tenant.
  const tenant = me.authenticated && (me.operator ? 'all tenants' : me.tenant ? 'tenant ' + me.tenant : '');
  return (
    <Session.Provider value={me}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current.focus())}>
        Skip to content
      </a>
      <header class="top">
        <button class="icon menu-btn" aria-expanded={menu} aria-controls="nav" aria-label="Menu" onClick={() => setMenu(!menu)}>
          ☰
        </button>
        <a class="brand" href="#/">
          queen-go
        </a>
        <button class="jump" onClick={() => setPalette(true)} aria-keyshortcuts="/ Control+K">
          Jump to… <kbd>/</kbd>
        </button>
        <label class="inline">
          <span>Refresh</span>
          <select
            value={String(refresh)}
            onChange={(e) => {
              setRefresh(+e.currentTarget.value);
              setRef(+e.currentTarget.value);
            }}
          >
            {REFRESH_CHOICES.map((s) => (
              <option key={s} value={String(s)}>
                {s ? s + ' s' : 'off'}
              </option>
            ))}
          </select>
        </label>
        <button class="icon" aria-label="Refresh now" onClick={refreshNow}>
          ↻
        </button>
        <label class="inline">
          <span>Theme</span>
          <select value={theme} onChange={(e) => setTheme(e.currentTarget.value)} id="theme-select">
            <option value="system">System</option>
            <option value="light">Light</option>
            <option value="dark">Dark</option>
          </select>
        </label>
        <label class="inline">
          <span>Times</span>
          <select value={utc ? 'utc' : 'local'} onChange={(e) => setUtc(e.currentTarget.value === 'utc')} id="tz-select">
            <option value="local">Local</option>
            <option value="utc">UTC</option>
          </select>
        </label>
        <button class={'chip auth-chip' + (me.authEnabled ? '' : ' warn')} onClick={() => me.authEnabled && setTokenDlg('')} aria-label={'Authentication: ' + chip}>
          {chip}
        </button>
        {tenant && (
          <span class="chip tenant-chip" id="tenant-chip" title="Tenant of your token: you see its queues only">
            {tenant}
          </span>
        )}
        <CopyButton text={() => location.href} label="Copy link" what="to this view" />
      </header>
      <div class="layout">
        <nav id="nav" aria-label="Main" class={menu ? 'open' : ''}>
          <ul>
            {NAV.map(([p, l]) => (
              <li key={p}>
                <a href={'#/' + p} aria-current={cur === p ? 'page' : undefined}>
                  {l}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" ref={main} tabIndex={-1}>
          <Banners me={me} expiring={expiring} onRenew={() => setTokenDlg('Your token expires soon')} />
          <View segs={route.segs} query={route.query} />
        </main>
      </div>
      <div class="sr-only" aria-live="polite" role="status" id="live">
        {live}
      </div>
      {tokenDlg !== null && <TokenDialog reason={tokenDlg} onClose={() => setTokenDlg(null)} />}
      {palette && <Palette onClose={() => setPalette(false)} />}
      {help && <Shortcuts onClose={() => setHelp(false)} />}
    </Session.Provider>
  );
}

render(<App />, document.getElementById('app'));
