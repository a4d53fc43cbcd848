// The session helper: an in-memory token holder for auth.getToken, with one shared
// rotation through the auth.refresh flow however many calls hit a 401 at once.
import type { ClientResult, CallInit } from "./types.js";

/** The common auth flow and gate codes. */
export const AUTH_ERROR_CODES = [
  "Unauthorized", "Forbidden", "RateLimited",
  "InvalidCredentials", "EmailTaken", "TokenReuse", "InvalidToken", "TokenExpired",
] as const;

export type AuthErrorCode = (typeof AUTH_ERROR_CODES)[number];

/** The token set of auth.signInEmail and auth.refresh. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  tokenType?: string;
  expiresIn?: number;
  expiresAt?: string;
}

/** What refresh(api) needs of a client: the auth.refresh flow. */
export interface RefreshApi {
  auth: { refresh: (input: { refreshToken: string }, init?: CallInit) => Promise<ClientResult<any, any>> };
}

/** Thrown by refresh when the user must sign in again. */
export class SignInRequiredError extends Error {
  constructor(message: string) {
    super("auth: sign-in required: " + message);
    this.name = "SignInRequiredError";
  }
}

export interface MemorySession {
  /** Stores a token set (from auth.signInEmail or auth.refresh); null signs out. */
  set(tokens: TokenSet | null): void;
  /** The access token, or null: pass as auth.getToken. */
  getToken(): string | null;
  /** The token set held, or null. */
  tokens(): TokenSet | null;
  /**
   * Rotates the tokens through api.auth.refresh. Concurrent calls share one rotation, since
   * a refresh token works once. Throws SignInRequiredError when no refresh token remains or
   * the server refuses it (the tokens are dropped), and a plain Error on a TransportError
   * (the tokens are kept).
   */
  refresh(api: RefreshApi): Promise<void>;
  /** Calls listener on every change of the tokens; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

export function memorySession(initial?: TokenSet | null): MemorySession {
  let held: TokenSet | null = initial || null;
  let flight: Promise<void> | null = null;
  const listeners = new Set<() => void>();
  const set = (t: TokenSet | null) => {
    held = t;
    listeners.forEach((l) => l());
  };

  async function rotate(api: RefreshApi): Promise<void> {
    const rt = held?.refreshToken;
    if (!rt) {
      set(null);
      throw new SignInRequiredError("no refresh token");
    }
    const res = await api.auth.refresh({ refreshToken: rt }, { refresh: false });
    if (res.error) {
      if (res.error.code == "TransportError") throw new Error("auth: refreshing the session: " + res.error.data.message);
      set(null);
      throw new SignInRequiredError("auth.refresh answered " + res.error.code);
    }
    if (!res.data?.accessToken) {
      set(null);
      throw new SignInRequiredError("auth.refresh returned no usable token set");
    }
    set(res.data);
  }

  return {
    set,
    getToken: () => held?.accessToken || null,
    tokens: () => held,
    refresh(api) {
      return (flight ||= rotate(api).finally(() => (flight = null)));
    },
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
}
