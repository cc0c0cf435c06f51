// jose: HS256 JWTs signed and verified with a fixed key and clock, decoding, base64url.
import { base64url, decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { tool } from './_tool.js';

export const args = {};
export async function run() {
  const key = new TextEncoder().encode('a-string-secret-at-least-256-bits-long');
  const jwt = await new SignJWT({ sub: 'u1', role: 'admin' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(1700000000)
    .setIssuer('kiln')
    .setExpirationTime(1700003600)
    .sign(key);
  const { payload } = await jwtVerify(jwt, key, { issuer: 'kiln', currentDate: new Date(1700000100 * 1000) });
  let expired;
  try {
    await jwtVerify(jwt, key, { currentDate: new Date(1800000000 * 1000) });
  } catch (e) {
    expired = [e.code, e.claim];
  }
  return {
    jwt,
    payload,
    expired,
    header: decodeProtectedHeader(jwt),
    decoded: decodeJwt(jwt),
    b64: [base64url.encode('hi?>'), new TextDecoder().decode(base64url.decode('aGk_Pg'))],
  };
}
tool('jose', run);
