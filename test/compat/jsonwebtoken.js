// jsonwebtoken: HS256 tokens signed with fixed claims and times, decoded and verified, and failures named.
import jwt from 'jsonwebtoken';
import { tool } from './_tool.js';

export const args = {};
const SECRET = 'a-very-secret-key-of-enough-length';
const IAT = 1709214330; // fixed so that the token is the same everywhere
export function run() {
  const token = jwt.sign({ sub: 'ada', role: 'admin', iat: IAT }, SECRET, { algorithm: 'HS256', expiresIn: '1h', issuer: 'kiln', keyid: 'k1' });
  const verify = (t, opts) => { try { return jwt.verify(t, SECRET, { clockTimestamp: IAT + 60, ...opts }); } catch (e) { return [e.name, e.message]; } };
  return {
    token,
    decoded: jwt.decode(token, { complete: true }),
    verified: verify(token, { issuer: 'kiln' }),
    expired: verify(token, { clockTimestamp: IAT + 7200 }),
    issuer: verify(token, { issuer: 'other' }),
    bad: verify(token.slice(0, -2) + 'xx'),
    hs512: jwt.sign({ n: 1 }, SECRET, { algorithm: 'HS512', noTimestamp: true }),
  };
}
tool('jsonwebtoken', run);
