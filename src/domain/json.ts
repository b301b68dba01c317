/** A JSON object of any members (a payload, an audit detail): one name for it in every schema. */
export type JsonObject = Record<string, unknown>;
