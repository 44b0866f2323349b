// The websocket side of the console: JSON-RPC 2.0 over one socket, the AHP
// handshake, and reconnect after a drop.
//
// Every action envelope carries a serverSeq. The connection remembers, per
// channel, the last one it delivered (and the snapshot's fromSeq), and
// drops any envelope at or below it: a reconnect replay that overlaps what
// already arrived is never applied twice. After a drop it dials again with
// backoff and sends `reconnect` with the highest serverSeq seen and its
// subscriptions; a replay is delivered as the live stream would be, a
// snapshot replaces the channel's state.

export const PROTOCOL_VERSIONS = ['1.0.0', '0.10.0'];
export const ROOT = 'ahp-root://';

export function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function b64url(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const x of bytes) bin += String.fromCharCode(x);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export class Connection {
  // handlers: onAction(env), onNotification(method, params),
  // onSnapshot(resource, state), onStatus(status, detail), onReady(initial)
  constructor(url, token, handlers) {
    this.url = url;
    this.token = token;
    this.h = handlers;
    this.clientId = 'console-' + uuid();
    this.nextId = 1;
    this.clientSeq = 0;
    this.pending = new Map();
    this.seen = new Map(); // channel -> last serverSeq applied
    this.lastSeen = 0;
    this.subs = new Set([ROOT]);
    this.ready = false;
    this.initialized = false;
    this.reconnects = 0; // handshakes by reconnect
    this.handshakes = 0; // handshakes of either kind
    this.backoff = 250;
    this.closed = false;
    this.init = null;
  }

  start() {
    this.closed = false;
    this.dial();
  }

  stop() {
    this.closed = true;
    if (this.ws) this.ws.close();
  }

  dial() {
    const protocols = ['ahpd'];
    if (this.token) protocols.push('ahpd.token.' + b64url(this.token));
    let ws;
    try {
      ws = new WebSocket(this.url, protocols);
    } catch (e) {
      this.h.onStatus('offline', String(e));
      this.retry();
      return;
    }
    this.ws = ws;
    this.h.onStatus(this.initialized ? 'reconnecting' : 'connecting');
    ws.onopen = () => this.opened(ws);
    ws.onmessage = (ev) => this.message(ev.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.ready = false;
      for (const [, p] of this.pending) p.reject(new Error('connection lost'));
      this.pending.clear();
      if (this.closed) return;
      this.h.onStatus('offline', 'connection lost; retrying');
      this.retry();
    };
  }

  retry() {
    if (this.closed) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, 5000);
    setTimeout(() => this.dial(), wait);
  }

  async opened(ws) {
    try {
      if (!this.initialized) {
        const r = await this.request('initialize', {
          channel: ROOT,
          protocolVersions: PROTOCOL_VERSIONS,
          clientId: this.clientId,
          clientInfo: { name: 'ahpd-console', title: 'ahpd web console' },
          initialSubscriptions: [ROOT],
        });
        this.init = r;
        this.lastSeen = Math.max(this.lastSeen, r.serverSeq || 0);
        for (const s of r.snapshots || []) {
          this.seen.set(s.resource, s.fromSeq || 0);
          this.h.onSnapshot(s.resource, s.state);
        }
        this.initialized = true;
        this.handshakes++;
        this.ready = true;
        this.backoff = 250;
        this.h.onStatus('online');
        this.h.onReady(true);
        return;
      }
      let r;
      try {
        r = await this.request('reconnect', {
          channel: ROOT,
          clientId: this.clientId,
          lastSeenServerSeq: this.lastSeen,
          subscriptions: [...this.subs],
        });
      } catch (e) {
        if (e.code === undefined) throw e; // the socket went again
        // The host cannot resume this client (a restarted daemon, say):
        // start afresh and let the page subscribe again.
        this.initialized = false;
        this.seen.clear();
        this.lastSeen = 0;
        this.subs = new Set([ROOT]);
        return this.opened(ws);
      }
      this.reconnects++;
      this.handshakes++;
      if (r.type === 'replay') {
        for (const env of r.actions || []) this.deliver(env);
        for (const ch of r.missing || []) this.subs.delete(ch);
      } else {
        for (const s of r.snapshots || []) {
          this.seen.set(s.resource, s.fromSeq || 0);
          this.lastSeen = Math.max(this.lastSeen, s.fromSeq || 0);
          this.h.onSnapshot(s.resource, s.state);
        }
      }
      this.ready = true;
      this.backoff = 250;
      this.h.onStatus('online');
      this.h.onReady(false, r.missing || []);
    } catch (e) {
      this.h.onStatus('offline', e.message);
      if (ws.readyState === WebSocket.OPEN) ws.close();
    }
  }

  message(data) {
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    if (m.method && m.id !== undefined) {
      // A request from the host (resourceRead of an attachment): the
      // console sends attachments inline, so it holds nothing to read.
      this.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'the console serves no requests' } });
      return;
    }
    if (m.method === 'action') {
      this.deliver(m.params);
      return;
    }
    if (m.method) {
      this.h.onNotification(m.method, m.params || {});
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) {
      const e = new Error(m.error.message || 'error');
      e.code = m.error.code;
      p.reject(e);
    } else p.resolve(m.result ?? {});
  }

  deliver(env) {
    if (!env || !env.channel) return;
    if (!env.rejectionReason && env.serverSeq) {
      const last = this.seen.get(env.channel) || 0;
      if (env.serverSeq <= last) return; // already applied (snapshot or earlier delivery)
      this.seen.set(env.channel, env.serverSeq);
      this.lastSeen = Math.max(this.lastSeen, env.serverSeq);
    }
    this.h.onAction(env);
  }

  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) throw new Error('not connected');
    this.ws.send(JSON.stringify(msg));
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.send({ jsonrpc: '2.0', id, method, params });
      } catch (e) {
        this.pending.delete(id);
        reject(e);
      }
    });
  }

  call(method, params) {
    if (!this.ready) return Promise.reject(new Error('offline'));
    return this.request(method, params);
  }

  dispatch(channel, action) {
    if (!this.ready) throw new Error('offline: not sent');
    const clientSeq = ++this.clientSeq;
    this.send({ jsonrpc: '2.0', method: 'dispatchAction', params: { channel, clientSeq, action } });
    return clientSeq;
  }

  async subscribe(channel, extra) {
    const r = await this.call('subscribe', { channel, ...extra });
    this.subs.add(channel);
    const snap = r.snapshot;
    if (snap) {
      this.seen.set(channel, snap.fromSeq || 0);
      this.lastSeen = Math.max(this.lastSeen, snap.fromSeq || 0);
    }
    return snap ? snap.state : null;
  }

  unsubscribe(channel) {
    this.subs.delete(channel);
    this.seen.delete(channel);
    if (this.ready) this.send({ jsonrpc: '2.0', method: 'unsubscribe', params: { channel } });
  }
}
