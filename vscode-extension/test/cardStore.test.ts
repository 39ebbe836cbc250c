import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CardStore, type StoreEvent } from '../src/cardStore';
import type { Card } from '../src/cards';
import { editCard, grepCard, pendingWriteCard } from './fixtures';

describe('card store', () => {
  it('a pending card is replaced by its final card (same callId); a late pending one is ignored', () => {
    const store = new CardStore();
    const events: StoreEvent[] = [];
    store.onChange((e) => events.push(e));
    const pending: Card = { ...editCard, status: 'pending', text: '' };
    store.upsert(pending);
    store.upsert(editCard);
    store.upsert(pending);
    assert.deepEqual(store.visible(), [editCard]);
    assert.deepEqual(events.map((e) => e.type), ['upsert', 'upsert']);
  });

  it('keeps arrival order and finds cards by callId', () => {
    const store = new CardStore();
    store.upsert(pendingWriteCard);
    store.upsert(grepCard);
    assert.deepEqual(store.visible().map((c) => c.callId), ['c1', 'call_grep']);
    assert.equal(store.find('call_grep'), grepCard);
  });

  it('a replay replaces what is shown until "back to live"; live cards keep arriving meanwhile', () => {
    const store = new CardStore();
    const events: string[] = [];
    store.onChange((e) => events.push(e.type));
    store.upsert(grepCard);
    store.showReplay('s1', [editCard]);
    store.upsert(pendingWriteCard);
    assert.deepEqual(store.visible(), [editCard]);
    assert.equal(store.replay?.sessionId, 's1');
    assert.equal(store.find('c1'), pendingWriteCard);
    store.showLive();
    assert.deepEqual(store.visible().map((c) => c.callId), ['call_grep', 'c1']);
    assert.deepEqual(events, ['upsert', 'reset', 'reset']);
  });

  it('drops the oldest cards past the limit', () => {
    const store = new CardStore(3);
    const removed: string[] = [];
    store.onChange((e) => {
      if (e.type === 'remove') {
        removed.push(...e.callIds);
      }
    });
    for (let i = 0; i < 5; i++) {
      store.upsert({ ...grepCard, callId: `c${i}` });
    }
    assert.deepEqual(store.visible().map((c) => c.callId), ['c2', 'c3', 'c4']);
    assert.deepEqual(removed, ['c0', 'c1']);
    store.setMaxCards(1);
    assert.deepEqual(store.visible().map((c) => c.callId), ['c4']);
    store.clear();
    assert.deepEqual(store.visible(), []);
  });
});
