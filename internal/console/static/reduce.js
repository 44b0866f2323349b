// Reducers: the console's copy of the chat and session state, kept by
// applying each echoed action envelope to the snapshot, as
// internal/reduce does on the host. The page never applies its own actions
// before the host echoes them, so what it shows is what the host stored.

import { reduceInput } from './ask.js';

export const STATUS = { Idle: 1, Error: 2, InProgress: 8, InputNeeded: 24, IsRead: 32, IsArchived: 64 };

export function statusText(s) {
  if ((s & 16) === 16) return 'needs input';
  if (s & 8) return 'running';
  if (s & 2) return 'error';
  return 'idle';
}

function partKey(p) {
  if (p.kind === 'markdown' || p.kind === 'reasoning') return p.id;
  if (p.kind === 'toolCall' && p.toolCall) return p.toolCall.toolCallId;
  return undefined;
}

function active(s, turnId) {
  return s.activeTurn && s.activeTurn.id === turnId ? s.activeTurn : null;
}

function appendTo(s, turnId, partId, kind, text) {
  const t = active(s, turnId);
  if (!t || !partId) return;
  for (const p of t.responseParts) {
    if (partKey(p) !== partId) continue;
    if (p.kind === kind) p.content = (p.content || '') + text;
    return;
  }
  // No part with that id yet: the first delta opens it.
  t.responseParts.push({ kind, id: partId, content: text });
}

function updateTool(s, turnId, id, f) {
  const t = active(s, turnId);
  if (!t) return;
  for (const p of t.responseParts) {
    if (p.kind === 'toolCall' && p.toolCall && p.toolCall.toolCallId === id) {
      p.toolCall = f({ ...p.toolCall }) || p.toolCall;
      return;
    }
  }
}

function endTurn(s, a, state, errPart) {
  const t = active(s, a.turnId);
  if (!t) return;
  const parts = t.responseParts.map((p) => {
    if (p.kind === 'toolCall' && p.toolCall && p.toolCall.status !== 'completed' && p.toolCall.status !== 'cancelled') {
      return { kind: 'toolCall', toolCall: { ...p.toolCall, status: 'cancelled', reason: 'skipped' } };
    }
    return p;
  });
  if (errPart) parts.push({ ...errPart, kind: 'error' });
  s.turns.push({ id: t.id, startedAt: t.startedAt, duration: a.duration, message: t.message, responseParts: parts, usage: t.usage, state });
  s.activeTurn = null;
}

export function reduceChat(s, a) {
  switch (a.type) {
    case 'chat/turnStarted': {
      if ((s.activeTurn && s.activeTurn.id === a.turnId) || s.turns.some((t) => t.id === a.turnId)) return;
      s.activeTurn = { id: a.turnId, startedAt: a.startedAt, message: a.message, responseParts: [] };
      const id = a.queuedMessageId;
      if (id) {
        if (s.steeringMessage && s.steeringMessage.id === id) s.steeringMessage = null;
        s.queuedMessages = (s.queuedMessages || []).filter((m) => m.id !== id);
      }
      return;
    }
    case 'chat/delta':
      return appendTo(s, a.turnId, a.partId, 'markdown', a.content);
    case 'chat/reasoning':
      return appendTo(s, a.turnId, a.partId, 'reasoning', a.content);
    case 'chat/responsePart': {
      const t = active(s, a.turnId);
      if (t && a.part && a.part.kind !== 'error') t.responseParts.push(structuredClone(a.part));
      return;
    }
    case 'chat/usage': {
      const t = active(s, a.turnId);
      if (t) t.usage = a.usage;
      return;
    }
    case 'chat/turnComplete':
      return endTurn(s, a, 'complete');
    case 'chat/turnCancelled':
      return endTurn(s, a, 'cancelled');
    case 'chat/error':
      return endTurn(s, a, 'error', a.part || { error: { message: 'error' } });
    case 'chat/turnResume': {
      const last = s.turns[s.turns.length - 1];
      if (s.activeTurn || !last || last.id !== a.turnId || last.state !== 'error') return;
      s.turns.pop();
      s.activeTurn = { id: last.id, startedAt: last.startedAt, message: last.message, responseParts: last.responseParts, usage: last.usage };
      return;
    }
    case 'chat/toolCallStart': {
      const t = active(s, a.turnId);
      if (t) t.responseParts.push({ kind: 'toolCall', toolCall: { status: 'streaming', toolCallId: a.toolCallId, toolName: a.toolName, displayName: a.displayName, intention: a.intention, _meta: a._meta } });
      return;
    }
    case 'chat/toolCallDelta':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (tc.status !== 'streaming') return null;
        if (a.content) tc.partialInput = (tc.partialInput || '') + a.content;
        if (a.invocationMessage) tc.invocationMessage = a.invocationMessage;
        return tc;
      });
    case 'chat/toolCallReady':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (!['streaming', 'running', 'pending-confirmation'].includes(tc.status)) return null;
        if (a.invocationMessage) tc.invocationMessage = a.invocationMessage;
        if (a.toolInput !== undefined) tc.toolInput = a.toolInput;
        if (a.intention) tc.intention = a.intention;
        if (a.confirmed) {
          tc.status = 'running';
          tc.confirmed = a.confirmed;
        } else {
          tc.status = 'pending-confirmation';
          if (a.confirmationTitle) tc.confirmationTitle = a.confirmationTitle;
          if (a.options) tc.options = a.options;
          if (a.edits) tc.edits = a.edits;
        }
        return tc;
      });
    case 'chat/toolCallConfirmed':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (tc.status !== 'pending-confirmation') return null;
        if (a.approved) {
          tc.status = 'running';
          tc.confirmed = a.confirmed || 'user-action';
        } else {
          tc.status = 'cancelled';
          tc.reason = a.reason || 'denied';
        }
        return tc;
      });
    case 'chat/toolCallComplete':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (!['running', 'pending-confirmation', 'auth-required'].includes(tc.status)) return null;
        const r = a.result || {};
        tc.success = !!r.success;
        tc.pastTenseMessage = r.pastTenseMessage;
        tc.content = r.content;
        tc.error = r.error;
        tc.status = a.requiresResultConfirmation ? 'pending-result-confirmation' : 'completed';
        return tc;
      });
    case 'chat/toolCallResultConfirmed':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (tc.status !== 'pending-result-confirmation') return null;
        tc.status = a.approved ? 'completed' : 'cancelled';
        if (!a.approved) tc.reason = 'result-denied';
        return tc;
      });
    case 'chat/toolCallContentChanged':
      return updateTool(s, a.turnId, a.toolCallId, (tc) => {
        if (tc.status !== 'running') return null;
        tc.content = a.content;
        return tc;
      });
    case 'chat/pendingMessageSet': {
      const m = { id: a.id, message: a.message };
      if (a.kind === 'steering') s.steeringMessage = m;
      else {
        const q = [...(s.queuedMessages || [])];
        const i = q.findIndex((x) => x.id === a.id);
        if (i >= 0) q[i] = m;
        else q.push(m);
        s.queuedMessages = q;
      }
      return;
    }
    case 'chat/pendingMessageRemoved':
      if (a.kind === 'steering') {
        if (s.steeringMessage && s.steeringMessage.id === a.id) s.steeringMessage = null;
      } else s.queuedMessages = (s.queuedMessages || []).filter((m) => m.id !== a.id);
      return;
    case 'chat/queuedMessagesReordered': {
      const q = s.queuedMessages || [];
      const byId = new Map(q.map((m) => [m.id, m]));
      const next = [];
      for (const id of a.order || []) if (byId.has(id)) next.push(byId.get(id)), byId.delete(id);
      for (const m of q) if (byId.has(m.id)) next.push(m);
      s.queuedMessages = next;
      return;
    }
    case 'chat/draftChanged':
      s.draft = a.draft || null;
      return;
    case 'chat/truncated': {
      if (!a.turnId) s.turns = [];
      else {
        const i = s.turns.findIndex((t) => t.id === a.turnId);
        if (i < 0) return;
        s.turns = s.turns.slice(0, i + 1);
      }
      s.activeTurn = null;
      return;
    }
    case 'chat/turnsLoaded': {
      const have = new Set(s.turns.map((t) => t.id));
      s.turns = [...(a.turns || []).filter((t) => !have.has(t.id)), ...s.turns];
      s.turnsNextCursor = a.turnsNextCursor;
      return;
    }
    case 'chat/activityChanged':
      s.activity = a.activity;
      return;
    case 'session/titleChanged':
      s.title = a.title;
      return;
    case 'chat/changesetsChanged':
      s.changesets = a.changesets;
      return;
    case 'chat/backgroundWorkSet': {
      const w = [...(s.backgroundWork || [])];
      const i = w.findIndex((x) => x.id === a.work.id);
      if (i >= 0) w[i] = a.work;
      else w.push(a.work);
      s.backgroundWork = w;
      return;
    }
    case 'chat/backgroundWorkRemoved':
      s.backgroundWork = (s.backgroundWork || []).filter((x) => x.id !== a.id);
      return;
    case 'chat/inputRequested':
    case 'chat/inputAnswerChanged':
    case 'chat/inputCompleted':
      return reduceInput(s, a);
  }
}

export function reduceSession(s, a) {
  switch (a.type) {
    case 'session/chatAdded': {
      const i = s.chats.findIndex((c) => c.resource === a.summary.resource);
      if (i >= 0) s.chats[i] = a.summary;
      else s.chats.push(a.summary);
      return;
    }
    case 'session/chatRemoved':
      s.chats = s.chats.filter((c) => c.resource !== a.chat);
      if (s.defaultChat === a.chat) s.defaultChat = undefined;
      return;
    case 'session/chatUpdated': {
      const c = s.chats.find((c) => c.resource === a.chat);
      if (c) Object.assign(c, a.changes);
      return;
    }
    case 'session/chatsReordered': {
      const byId = new Map(s.chats.map((c) => [c.resource, c]));
      if (a.chats.length === s.chats.length && a.chats.every((u) => byId.has(u))) s.chats = a.chats.map((u) => byId.get(u));
      return;
    }
    case 'session/defaultChatChanged':
      s.defaultChat = a.defaultChat;
      return;
    case 'session/titleChanged':
      s.title = a.title;
      return;
    case 'session/activityChanged':
      s.activity = a.activity;
      return;
  }
}
