// Path matching: static over parameter with backtracking, 405 detection, raw segments.
import { describe, expect, it } from 'vitest';
import { RouteTable, templateParams } from '../route-table.js';

function table() {
  const t = new RouteTable<string>();
  t.add('GET', '/v1/indexes', 'list');
  t.add('POST', '/v1/indexes', 'create');
  t.add('GET', '/v1/indexes/stream', 'stream');
  t.add('DELETE', '/v1/indexes/{index_id}', 'delete');
  t.add('GET', '/v1/indexes/{index_id}/stats', 'stats');
  t.add('GET', '/v1/indexes/{index_id}/documents/{doc_id}', 'doc');
  t.add('QUERY', '/v1/typeahead', 'typeahead-query');
  t.add('GET', '/', 'root');
  return t;
}

describe('RouteTable', () => {
  it('matches static routes from the fast map', () => {
    expect(table().match('GET', '/v1/indexes')).toEqual({ kind: 'found', route: 'list', params: [] });
    expect(table().match('QUERY', '/v1/typeahead')).toEqual({ kind: 'found', route: 'typeahead-query', params: [] });
    expect(table().match('GET', '/')).toEqual({ kind: 'found', route: 'root', params: [] });
  });

  it('binds raw parameters, keeping encoded slashes inside their segment', () => {
    expect(table().match('GET', '/v1/indexes/a%2Fb/documents/x%2F..%2Fy')).toEqual({ kind: 'found', route: 'doc', params: ['a%2Fb', 'x%2F..%2Fy'] });
  });

  it('prefers static segments and backtracks to parameters', () => {
    expect(table().match('GET', '/v1/indexes/stream')).toMatchObject({ route: 'stream' });
    expect(table().match('DELETE', '/v1/indexes/stream')).toEqual({ kind: 'found', route: 'delete', params: ['stream'] });
    expect(table().match('GET', '/v1/indexes/stream/stats')).toEqual({ kind: 'found', route: 'stats', params: ['stream'] });
  });

  it('tells a wrong method (405 with the allowed list) from an unknown path', () => {
    expect(table().match('PUT', '/v1/indexes')).toEqual({ kind: 'method', allowed: ['GET', 'POST'] });
    expect(table().match('POST', '/v1/indexes/stream')).toEqual({ kind: 'method', allowed: ['DELETE', 'GET'] });
    expect(table().match('GET', '/v1/nothing')).toEqual({ kind: 'none' });
    expect(table().match('GET', '/v1/indexes//stats')).toEqual({ kind: 'none' });
    expect(table().match('GET', 'v1/indexes')).toEqual({ kind: 'none' });
  });

  it('ignores one trailing slash only', () => {
    expect(table().match('GET', '/v1/indexes/')).toMatchObject({ route: 'list' });
    expect(table().match('GET', '/v1/indexes//')).toEqual({ kind: 'none' });
  });

  it('refuses a duplicate registration', () => {
    const t = table();
    expect(() => t.add('GET', '/v1/indexes', 'again')).toThrow(/twice/);
  });

  it('lists template parameters', () => {
    expect(templateParams('/v1/indexes/{index_id}/documents/{doc_id}')).toEqual(['index_id', 'doc_id']);
  });
});
