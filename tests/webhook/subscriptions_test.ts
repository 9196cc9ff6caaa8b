import assert from "node:assert/strict";
import { join } from "node:path";
import { record } from "./_records.ts";
import {
  dynamicRoutes,
  readSubscriptions,
  SubscriptionFileError,
  updateSubscriptions,
} from "../../src/webhook/subscriptions.ts";

async function withFile(body: (file: string) => void | Promise<void>) {
  const home = await Deno.makeTempDir({ prefix: "subscriptions-" });
  try {
    await body(join(home, "webhook_subscriptions.json"));
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

function fileError(body: () => unknown): SubscriptionFileError {
  try {
    body();
  } catch (error) {
    assert.ok(error instanceof SubscriptionFileError, `expected a SubscriptionFileError: ${error}`);
    return error;
  }
  assert.fail("expected a SubscriptionFileError, nothing was thrown");
}

Deno.test("readSubscriptions: a name written twice is a file error naming both lines and a fix; updates leave the file alone", async () => {
  await withFile((file) => {
    const first = JSON.stringify(record({ secret: "first-secret-0123456789" }));
    const second = JSON.stringify(record({ secret: "second-secret-0123456789" }));
    const text = `{\n  "q1": ${first},\n  "q2": ${
      JSON.stringify(record())
    },\n  "q1": ${second}\n}\n`;
    Deno.writeTextFileSync(file, text);
    const error = fileError(() => readSubscriptions(file));
    assert.equal(
      error.message,
      `${file}: line 4: the file has the key "q1" twice in the object at $; each key may appear ` +
        'once per object. Fix: keep one of the two "q1" keys (lines 2 and 4): rename the other ' +
        "record to a new subscription name, or delete it (it is never overwritten while broken)",
    );
    // JSON.parse would keep the second q1: a rewrite would lose the first and its secret.
    const changed = fileError(() =>
      updateSubscriptions(file, (records) => {
        records.q9 = record();
      })
    );
    assert.equal(changed.message, error.message);
    assert.equal(Deno.readTextFileSync(file), text);
  });
});

Deno.test("readSubscriptions: a key written twice inside a record is a file error too", async () => {
  await withFile((file) => {
    const text = '{\n  "q1": {\n    "prompt": "a",\n    "prompt": "b"\n  }\n}\n';
    Deno.writeTextFileSync(file, text);
    const error = fileError(() => readSubscriptions(file));
    assert.match(
      error.message,
      /: line 4: the file has the key "prompt" twice in the object at \$\.q1; .*Fix: keep one of the two "prompt" keys \(lines 3 and 4\): delete the other \(/,
    );
  });
});

Deno.test("readSubscriptions: a record that is not an object is an invalid record; the others are used and can change", async () => {
  await withFile((file) => {
    for (const bad of ["5", "null", '"x"', "[]"]) {
      const text = `{"q1": ${bad}, "q2": ${JSON.stringify(record())}}`;
      Deno.writeTextFileSync(file, text);
      const records = readSubscriptions(file);
      assert.deepEqual(Object.keys(records), ["q1", "q2"], bad);
      const { routes, problems } = dynamicRoutes(records, file);
      assert.deepEqual(routes.map((route) => route.name), ["q2"], bad);
      assert.deepEqual(problems, [`${file}: q1: expected a mapping of route settings`], bad);
      // Subscribing another name keeps the invalid record as it was.
      updateSubscriptions(file, (current) => {
        current.q9 = record();
      });
      const after = JSON.parse(Deno.readTextFileSync(file));
      assert.deepEqual(Object.keys(after), ["q1", "q2", "q9"], bad);
      assert.deepEqual(after.q1, JSON.parse(bad), bad);
    }
  });
});
