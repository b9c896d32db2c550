/**
 * Every row of the credential-shape table (src/leaks/credential_shapes.ts) with a sample it
 * must replace and near misses it must leave alone; a row without samples fails the last test.
 */
import { assert, assertEquals } from "../assert.ts";
import { CREDENTIAL_SHAPES } from "../../src/leaks/credential_shapes.ts";
import { LeakDetector } from "../../src/leaks/leak_detector.ts";

const A36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
const PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nVJTUt9Us8cKj";

/** Per kind: texts holding one credential (the whole of `found` is replaced), and near misses. */
const SAMPLES: Record<string, { found: string[]; misses: string[] }> = {
  private_key: {
    found: [
      `-----BEGIN PRIVATE KEY-----\n${PEM_BODY}\n-----END PRIVATE KEY-----`,
      `-----BEGIN OPENSSH PRIVATE KEY-----\n${PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----`,
      `-----BEGIN RSA PRIVATE KEY-----\\n${
        PEM_BODY.replace("\n", "\\n")
      }\\n-----END RSA PRIVATE KEY-----`,
      `-----BEGIN EC PRIVATE KEY-----\n${PEM_BODY}`, // cut off: the encoded lines still go
      // Its BEGIN line not there (a page read from an offset, a head-and-tail cut): the end of
      // an RSA key holds dQ and qInv, enough to rebuild it.
      `${PEM_BODY}\n-----END RSA PRIVATE KEY-----`,
      `${PEM_BODY.replace("\n", "\\n")}\\n-----END OPENSSH PRIVATE KEY-----`,
    ],
    misses: [
      `-----BEGIN CERTIFICATE-----\n${PEM_BODY}\n-----END CERTIFICATE-----`,
      `${PEM_BODY}\n-----END CERTIFICATE-----`,
    ],
  },
  anthropic_key: {
    found: [`sk-ant-api03-${A36}_-xyz`, `sk-ant-admin01-${A36}`],
    misses: ["sk-ant-short", "ask-ant-"],
  },
  openai_key: {
    found: [`sk-proj-${A36}`, `sk-${A36}`, `sk-svcacct-${A36}`],
    misses: ["sk-learn", "task-runner-settings", "sk-1234"],
  },
  aws_access_key_id: {
    found: ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"],
    misses: ["AKIAIOSFODNN7EXAMPLEX", "XAKIAIOSFODNN7EXAMPLE", "AKIA-not-a-key"],
  },
  aws_secret_key: {
    found: [
      "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
      'SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
    ],
    misses: ["aws_secret_access_key = <set me>"],
  },
  gcp_api_key: {
    found: ["AIzaSyD-1234567890abcdefghijklmnopqrstu"],
    misses: ["AIzaShort"],
  },
  gcp_oauth_secret: {
    found: ["GOCSPX-1234567890abcdefghijklmnopqr"],
    misses: ["GOCSPX-short"],
  },
  gcp_access_token: {
    found: ["ya29.a0AfH6SMBx1234567890abcdefghijklmnopqrstuvwxyz"],
    misses: ["ya29.short"],
  },
  azure_storage_key: {
    found: [`AccountKey=${"Ab1+/".repeat(17)}x==`],
    misses: ["AccountKey=short=="],
  },
  azure_client_secret: {
    found: ["abc1Q~defghijklmnopqrstuvwxyz0123456789"],
    misses: ["see Q~ here", "abc1Q~short"],
  },
  github_token: {
    found: [`ghp_${A36}`, `gho_${A36}`, `ghs_${A36}`, `github_pat_11ABCDEFG0123456789_abcdefghij`],
    misses: ["ghp_short", "github_pat_x"],
  },
  slack_token: {
    found: [
      "xoxb-1234567890-0987654321-AbCdEfGhIjKl",
      "xoxp-1234567890-abcdef",
      "xapp-1-A0123-abcdefghij",
    ],
    misses: ["xoxb-short"],
  },
  slack_webhook: {
    found: ["hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"],
    misses: ["hooks.slack.com/services/"],
  },
};

const detector = new LeakDetector([]);

// One test per kind: the private key has two rows (its BEGIN line, and its END line alone).
const KINDS = [...new Map(CREDENTIAL_SHAPES.map((shape) => [shape.kind, shape])).values()];
for (const shape of KINDS) {
  Deno.test(`credential shape ${shape.kind}: samples replaced, near misses kept`, () => {
    const samples = SAMPLES[shape.kind];
    assert(samples, `no samples for ${shape.kind}`);
    for (const sample of samples.found) {
      const { text, leaks } = detector.redact(`before ${sample} after`);
      assertEquals(text, `before [redacted: ${shape.label}] after`, sample);
      assertEquals(leaks, [{ kind: shape.kind, form: "shape" }]);
    }
    for (const miss of samples.misses) {
      assertEquals(detector.redact(`before ${miss} after`).leaks, [], miss);
    }
  });
}

Deno.test("credential shapes: every sampled kind is a row of the table", () => {
  assertEquals(Object.keys(SAMPLES).sort(), KINDS.map((s) => s.kind).sort());
});
