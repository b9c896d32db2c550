/**
 * Well-known credential formats, in one table: what each looks like, and the literal text it
 * starts with (its trigger), which the one-pass automaton finds before the row's expression is
 * tried there. Each row has a test (tests/leaks/credential_shapes_test.ts) with a sample.
 * @module
 */

/** One kind of credential. */
export interface CredentialShape {
  /** Stable id, logged as the leak's `kind`. */
  kind: string;
  /** What the marker says: `[redacted: <label>]`. */
  label: string;
  /** Literal texts one of which every match contains; the expression is tried at each. */
  triggers: readonly string[];
  /** How many characters before the trigger a match may begin. */
  before?: number;
  /**
   * Characters a match also takes in backwards from where it begins, up to
   * `BACKWARD_LIMIT`: the encoded lines before a PEM END line whose BEGIN line is not there.
   */
  backOver?: RegExp;
  /**
   * The whole credential; tried sticky (`y`) from the trigger (less `before`). It must fail
   * fast where the credential is not: it runs at every trigger.
   */
  pattern: RegExp;
}

/** How far `backOver` reaches: the encoded body of an 8,192-bit RSA key, and some. */
export const BACKWARD_LIMIT = 16_384;

/** Characters of keys made of letters, digits, `_` and `-`. */
const TOKEN = "[A-Za-z0-9_-]";

/**
 * The table. Rows with the same trigger are tried in order (the Anthropic key before the more
 * general OpenAI `sk-`), and the first that matches wins.
 */
export const CREDENTIAL_SHAPES: readonly CredentialShape[] = [
  {
    kind: "private_key",
    label: "private key",
    triggers: ["-----BEGIN"],
    // The whole block when its end is near; else (cut off) the encoded lines that follow.
    pattern: new RegExp(
      "-----BEGIN[A-Z ]{0,30}PRIVATE KEY( BLOCK)?-----" +
        "(?:[\\s\\S]{0,16384}?-----END[A-Z ]{0,30}PRIVATE KEY( BLOCK)?-----|[A-Za-z0-9+/=\\r\\n\\\\:,-]*)",
      "y",
    ),
  },
  {
    kind: "private_key",
    label: "private key",
    // The end of a key whose BEGIN line is not in the text (a page of a file read from an
    // offset, output cut to its head and tail): the END line and the encoded lines before it.
    // The triggers name private keys only, so a certificate bundle's END lines cost nothing.
    triggers: [
      "-----END PRIVATE KEY",
      "-----END RSA PRIVATE KEY",
      "-----END EC PRIVATE KEY",
      "-----END DSA PRIVATE KEY",
      "-----END OPENSSH PRIVATE KEY",
      "-----END ENCRYPTED PRIVATE KEY",
      "-----END PGP PRIVATE KEY BLOCK",
    ],
    pattern: /-----END[A-Z ]{0,30}PRIVATE KEY( BLOCK)?-----/y,
    backOver: /[A-Za-z0-9+/=\r\n\\]/,
  },
  {
    kind: "anthropic_key",
    label: "anthropic key",
    triggers: ["sk-ant-"],
    pattern: new RegExp(`sk-ant-${TOKEN}{20,}`, "y"),
  },
  {
    kind: "openai_key",
    label: "openai key",
    triggers: ["sk-"],
    pattern: new RegExp(`sk-(?:proj-|svcacct-|admin-|None-)?${TOKEN}{20,}`, "y"),
  },
  {
    kind: "aws_access_key_id",
    label: "aws access key id",
    triggers: ["AKIA", "ASIA", "ABIA", "ACCA"],
    pattern: /(?<![A-Z0-9])A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])/y,
  },
  {
    kind: "aws_secret_key",
    label: "aws secret access key",
    triggers: ["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey"],
    pattern:
      /(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey)["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])["']?/y,
  },
  {
    kind: "gcp_api_key",
    label: "google cloud api key",
    triggers: ["AIza"],
    pattern: new RegExp(`AIza${TOKEN}{35}`, "y"),
  },
  {
    kind: "gcp_oauth_secret",
    label: "google oauth client secret",
    triggers: ["GOCSPX-"],
    pattern: new RegExp(`GOCSPX-${TOKEN}{28}`, "y"),
  },
  {
    kind: "gcp_access_token",
    label: "google oauth access token",
    triggers: ["ya29."],
    pattern: new RegExp(`ya29\\.${TOKEN}{30,}`, "y"),
  },
  {
    kind: "azure_storage_key",
    label: "azure storage account key",
    triggers: ["AccountKey="],
    pattern: /AccountKey=[A-Za-z0-9+/]{86}==/y,
  },
  {
    kind: "azure_client_secret",
    label: "azure client secret",
    triggers: ["Q~"],
    before: 4,
    pattern:
      /(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])/y,
  },
  {
    kind: "github_token",
    label: "github token",
    triggers: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    pattern: /(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})/y,
  },
  {
    kind: "slack_token",
    label: "slack token",
    triggers: ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-"],
    pattern: /(?:xox[bpares]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})/y,
  },
  {
    kind: "slack_webhook",
    label: "slack webhook",
    triggers: ["hooks.slack.com/services/"],
    pattern: /hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]+/y,
  },
];
