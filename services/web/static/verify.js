// Sabot's checks in the browser, trusting nothing the server computes: SABOT-SHUFFLE-1
// (docs/sources/SHUFFLE.md) with WebCrypto's SHA-256 and HMAC, the commitment and the order
// digest, a coup's cards against the rebuilt shoe, an RFC 6962 inclusion proof, and the
// Ed25519 signature of a signed checkpoint (SABOT-CHECKPOINT-1). No library, no server call.
"use strict";

const SabotVerify = (() => {
  const subtle = globalThis.crypto.subtle;
  const ascii = (text) => new TextEncoder().encode(text);

  function concat(...parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  }

  function hex(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function unhex(text) {
    if (!/^([0-9a-f]{2})*$/i.test(text)) throw new Error(`not hexadecimal: ${text.slice(0, 16)}`);
    const out = new Uint8Array(text.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
    return out;
  }

  function uuidBytes(uuid) {
    const digits = uuid.replace(/-/g, "");
    if (digits.length !== 32) throw new Error(`not a UUID: ${uuid}`);
    return unhex(digits);
  }

  async function sha256(data) {
    return new Uint8Array(await subtle.digest("SHA-256", data));
  }

  async function hmac(key, data) {
    const k = await subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false,
                                     ["sign"]);
    return new Uint8Array(await subtle.sign("HMAC", k, data));
  }

  // NIST SP 800-90A HMAC_DRBG, SHA-256, no reseed, no prediction resistance.
  class Drbg {
    constructor() { this.K = new Uint8Array(32); this.V = new Uint8Array(32).fill(1); }

    static async create(entropy, nonce, personalization) {
      const d = new Drbg();
      await d.update(concat(entropy, nonce, personalization));
      return d;
    }

    async update(data) {
      this.K = await hmac(this.K, concat(this.V, Uint8Array.of(0), data));
      this.V = await hmac(this.K, this.V);
      if (data.length) {
        this.K = await hmac(this.K, concat(this.V, Uint8Array.of(1), data));
        this.V = await hmac(this.K, this.V);
      }
    }

    async generate(n) {
      const parts = [];
      let have = 0;
      while (have < n) { this.V = await hmac(this.K, this.V); parts.push(this.V); have += 32; }
      await this.update(new Uint8Array(0));
      return concat(...parts).slice(0, n);
    }
  }

  const TWO64 = 1n << 64n;

  async function uniform(drbg, n) {
    const limit = TWO64 - (TWO64 % BigInt(n));
    for (;;) {
      const bytes = await drbg.generate(8);
      let x = 0n;
      for (const b of bytes) x = (x << 8n) | BigInt(b);
      if (x < limit) return Number(x % BigInt(n));
    }
  }

  const DECKS = {
    "FRENCH-52": { suits: ["S", "H", "D", "C"],
                   ranks: ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"] },
    "FRENCH-40": { suits: ["S", "H", "D", "C"],
                   ranks: ["A", "2", "3", "4", "5", "6", "7", "J", "Q", "K"] },
    "SPANISH-40": { suits: ["O", "C", "E", "B"],
                    ranks: ["1", "2", "3", "4", "5", "6", "7", "10", "11", "12"] },
  };

  function canonicalDeck(kind, decks) {
    const deck = DECKS[kind];
    if (!deck) throw new Error(`unknown deck kind ${kind}`);
    const cards = [];
    for (let d = 0; d < decks; d++) {
      for (const s of deck.suits) for (const r of deck.ranks) cards.push(r + s);
    }
    return cards;
  }

  const PERSONALIZATION = ascii("SABOT-SHUFFLE-1");

  // The shoe before the cut: Fisher-Yates (Durstenfeld) driven by the DRBG.
  async function shuffle(seedHex, shoeId, kind, decks) {
    const cards = canonicalDeck(kind, decks);
    const drbg = await Drbg.create(unhex(seedHex), uuidBytes(shoeId), PERSONALIZATION);
    for (let i = cards.length - 1; i >= 1; i--) {
      const j = await uniform(drbg, i + 1);
      [cards[i], cards[j]] = [cards[j], cards[i]];
    }
    return cards;
  }

  function cut(cards, position) {
    return position ? cards.slice(position).concat(cards.slice(0, position)) : cards.slice();
  }

  async function commitment(seedHex, shoeId) {
    return hex(await sha256(concat(PERSONALIZATION, uuidBytes(shoeId), unhex(seedHex))));
  }

  async function orderDigest(cards) {
    return hex(await sha256(ascii(cards.join(" "))));
  }

  // Treinta y Una's banker by lot (domain/treinta_y_una/banker.py): one uniform draw among the
  // seats from HMAC_DRBG(seed, the shoe's id, "SABOT-TYU-BANK-LOT-1").
  async function bankLot(seedHex, nonce, seats) {
    const drbg = await Drbg.create(unhex(seedHex), uuidBytes(nonce), ascii("SABOT-TYU-BANK-LOT-1"));
    return uniform(drbg, seats);
  }

  // SABOT-HIDDEN-1 (services/ledger/hidden.py): a face-down card's salt from the seed, and its
  // commitment from the salt, its position and its face.
  const HIDDEN = ascii("SABOT-HIDDEN-1");

  function u32be(n) {
    return Uint8Array.of((n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
  }

  async function hiddenSalt(seedHex, shoeId, position) {
    return hex(await hmac(unhex(seedHex), concat(HIDDEN, uuidBytes(shoeId), u32be(position))));
  }

  async function hiddenCommitment(saltHex, position, code) {
    return hex(await sha256(concat(HIDDEN, unhex(saltHex), u32be(position), ascii(code))));
  }

  // RFC 6962 / RFC 9162 §2.1.3.2: the root an audit path gives for a leaf.
  async function inclusionRoot(leafHash, index, size, path) {
    if (index >= size) throw new Error("leaf index past the tree");
    let fn = index, sn = size - 1, r = leafHash;
    for (const p of path) {
      if (sn === 0) throw new Error("the path is too long");
      if (fn % 2 === 1 || fn === sn) {
        r = await sha256(concat(Uint8Array.of(1), p, r));
        if (fn % 2 === 0) { while (fn % 2 === 0 && fn !== 0) { fn >>= 1; sn >>= 1; } }
      } else {
        r = await sha256(concat(Uint8Array.of(1), r, p));
      }
      fn >>= 1; sn >>= 1;
    }
    if (sn !== 0) throw new Error("the path is too short");
    return r;
  }

  // An RFC 6962 leaf hash, SHA-256(0x00 || leaf), of a leaf's bytes (text: its UTF-8).
  async function leafHash(leaf) {
    return sha256(concat(Uint8Array.of(0), typeof leaf === "string" ? ascii(leaf) : leaf));
  }

  // Stored JSON with the transcoders' {"_type_", "_data_"} wrappers taken off, as the ledger's
  // readers show it (services/ledger/core.py unwrapped).
  function unwrapped(value) {
    if (Array.isArray(value)) return value.map(unwrapped);
    if (value === null || typeof value !== "object") return value;
    const keys = Object.keys(value);
    if (keys.length === 2 && "_type_" in value && "_data_" in value) return unwrapped(value._data_);
    const out = {};
    for (const k of keys) out[k] = unwrapped(value[k]);
    return out;
  }

  // Canonical JSON as services/regulator/canonical.py writes it: keys sorted, no spaces.
  function canonicalJson(value) {
    if (value === null || typeof value !== "object") return JSON.stringify(value);
    if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }

  // A checkpoint's Ed25519 signature with the public key the checker pinned (hex, 32 bytes).
  async function checkpointSigned(cp, publicKeyHex) {
    const body = { coup: cp.coup ?? null, origin: cp.origin, position: cp.position ?? null,
                   root: cp.root, size: cp.size };
    const message = concat(ascii("SABOT-CHECKPOINT-1\n"), ascii(canonicalJson(body)));
    const key = await subtle.importKey("raw", unhex(publicKeyHex), { name: "Ed25519" }, false,
                                       ["verify"]);
    return subtle.verify({ name: "Ed25519" }, key, unhex(cp.signature), message);
  }

  async function keyId(publicKeyHex) {
    return hex(await sha256(unhex(publicKeyHex))).slice(0, 16);
  }

  return { hex, unhex, sha256, Drbg, uniform, canonicalDeck, shuffle, cut, commitment,
           orderDigest, hiddenSalt, hiddenCommitment, bankLot, inclusionRoot, leafHash, unwrapped,
           canonicalJson, checkpointSigned, keyId };
})();

globalThis.SabotVerify = SabotVerify;
