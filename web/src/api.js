// The broker's API as the dashboard calls it: relative paths (so a proxy may mount the page under a
// sub-path, docs/api/dashboard.md §4.1), the bearer token from session or local storage (§4.2), and
// the events the shell shows as banners and dialogs.

const KEY = 'qg.token';

let token = null;
try {
  token = sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || null;
} catch {
  token = null;
}

const listeners = {};
/** on subscribes to an event of the API layer ('unauthorized', 'forbidden', 'net', 'changed'). */
export function on(name, fn) {
  (listeners[name] ||= new Set()).add(fn);
  return () => listeners[name].delete(fn);
}
export function emit(name, arg) {
  for (const fn of listeners[name] || []) fn(arg);
}

export const auth = {
  get token() {
    return token;
  },
  remembered() {
    try {
      return !!localStorage.getItem(KEY);
    } catch {
      return false;
    }
  },
  /** set keeps t in sessionStorage, or in localStorage when remember is chosen. */
  set(t, remember) {
    token = t;
    try {
      sessionStorage.removeItem(KEY);
      localStorage.removeItem(KEY);
      (remember ? localStorage : sessionStorage).setItem(KEY, t);
    } catch {
      /* storage refused: memory only */
    }
    emit('changed');
  },
  forget() {
    token = null;
    try {
      sessionStorage.removeItem(KEY);
      localStorage.removeItem(KEY);
    } catch {
      /* nothing kept */
    }
    emit('changed');
  },
};

/** ApiError carries the broker's status and exact error text. */
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** qs builds a query string from the non-empty values of obj. */
export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj || {})) {
    if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

/** seg percent-encodes one path segment (queue names may hold '/'). */
export const seg = (s) => encodeURIComponent(s);

/**
 * api calls the broker. path is relative to the page ('api/v1/…', 'health'); a body is sent as
 * JSON. It resolves to the parsed answer and rejects with an ApiError.
 */
export async function api(path, { method = 'GET', body, signal, tokenOverride } = {}) {
  const headers = {};
  const t = tokenOverride !== undefined ? tokenOverride : token;
  if (t) headers.Authorization = 'Bearer ' + t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    emit('net', false);
    throw new ApiError(0, 'Broker unreachable');
  }
  emit('net', true);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!res.ok) {
    const msg = (data && data.error) || res.statusText || 'HTTP ' + res.status;
    if (res.status === 401 && tokenOverride === undefined) emit('unauthorized', msg);
    if (res.status === 503) emit('db', msg);
    throw new ApiError(res.status, msg, data);
  }
  return data;
}
