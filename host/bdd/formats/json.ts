// The Cucumber JSON report (`--format json`), built from the message stream alone. cucumber-js 13 still writes it
// with a legacy formatter (lib/formatter/json_formatter.js) that reads its own run state; this is the same report
// computed from the envelopes that state is built from, field for field and in the same key order, so
// `JSON.stringify` of both is the same text for the same run. What it keeps of cucumber-js's quirks, on purpose
// (tools that read this format expect them):
// - no `background` elements: a Background's steps are the scenario's first steps;
// - hooks are steps with keyword `Before` (until the first Gherkin step) or `After`, `hidden: true`, no name,
//   line or arguments, and no `match` (cucumber-js looks hooks up among step definitions and finds none);
// - `match.location` only when exactly one step definition matched (not for undefined or ambiguous steps);
// - ids are names with spaces turned into `-`, lower-cased, nothing else escaped (`feature;rule;scenario`);
// - a tag inherited from a Rule has no `line` (cucumber-js looks for it in the feature, scenario and examples only);
// - attempts that will be retried are left out: a retried scenario appears once, with its last attempt;
// - `error_message` is `testStepResult.message` (the error text with its stack), only on failed steps;
// - attachments are kept only when they belong to a test step (not those of BeforeAll/AfterAll hooks).
import {
  AttachmentContentEncoding,
  type Attachment,
  type Envelope,
  type Feature,
  type GherkinDocument,
  type Location,
  type Pickle,
  type PickleStepArgument,
  type Rule,
  type Scenario,
  type SourceReference,
  type Step,
  type Tag,
  type TestCase,
  type TestStep,
  type TestStepResult,
  TestStepResultStatus,
} from '@cucumber/messages';

export interface JsonFeature {
  description: string;
  elements: JsonScenario[];
  id: string;
  line: number;
  keyword: string;
  name: string;
  tags: JsonTag[];
  uri: string;
}

export interface JsonScenario {
  description: string;
  id: string;
  keyword: string;
  line: number;
  name: string;
  steps: JsonStep[];
  tags: JsonTag[];
  type: 'scenario';
}

export interface JsonStep {
  result: { status: string; duration?: number; error_message?: string };
  arguments?: JsonArgument[];
  keyword: string;
  line?: number;
  name?: string;
  hidden?: true;
  match?: { location: string };
  embeddings?: { data: string; mime_type: string }[];
}

export type JsonArgument = { rows: { cells: string[] }[] } | { content: string; line: number };

export interface JsonTag {
  name: string;
  line?: number;
}

interface Attempt {
  testCaseId: string;
  willBeRetried: boolean;
  results: Map<string, TestStepResult>;
  attachments: Map<string, Attachment[]>;
}

const NANOS_IN_SECOND = 1_000_000_000;

/** Collects the envelopes a JSON report needs; `report()` builds it (cucumber-js builds it at testRunFinished). */
export class JsonReport {
  private readonly documents = new Map<string, GherkinDocument>();
  private readonly pickles = new Map<string, Pickle>();
  private readonly testCases = new Map<string, TestCase>();
  private readonly stepDefinitions = new Map<string, SourceReference>();
  private readonly attempts = new Map<string, Attempt>();

  update(envelope: Envelope): void {
    if (envelope.gherkinDocument) {
      if (envelope.gherkinDocument.uri !== undefined) this.documents.set(envelope.gherkinDocument.uri, envelope.gherkinDocument);
    } else if (envelope.pickle) {
      this.pickles.set(envelope.pickle.id, envelope.pickle);
    } else if (envelope.stepDefinition) {
      this.stepDefinitions.set(envelope.stepDefinition.id, envelope.stepDefinition.sourceReference);
    } else if (envelope.testCase) {
      this.testCases.set(envelope.testCase.id, envelope.testCase);
    } else if (envelope.testCaseStarted) {
      const { id, testCaseId } = envelope.testCaseStarted;
      const testCase = this.testCases.get(testCaseId);
      // Every step starts as UNKNOWN with a zero duration, as in cucumber-js: a run cut short still lists them.
      const results = new Map<string, TestStepResult>();
      for (const step of testCase?.testSteps ?? []) {
        results.set(step.id, { duration: { seconds: 0, nanos: 0 }, status: TestStepResultStatus.UNKNOWN });
      }
      this.attempts.set(id, { testCaseId, willBeRetried: false, results, attachments: new Map() });
    } else if (envelope.attachment) {
      const { testCaseStartedId, testStepId } = envelope.attachment;
      const attempt = testCaseStartedId !== undefined ? this.attempts.get(testCaseStartedId) : undefined;
      if (attempt && testStepId !== undefined) {
        let list = attempt.attachments.get(testStepId);
        if (!list) attempt.attachments.set(testStepId, (list = []));
        list.push(envelope.attachment);
      }
    } else if (envelope.testStepFinished) {
      const { testCaseStartedId, testStepId, testStepResult } = envelope.testStepFinished;
      this.attempts.get(testCaseStartedId)?.results.set(testStepId, testStepResult);
    } else if (envelope.testCaseFinished) {
      const attempt = this.attempts.get(envelope.testCaseFinished.testCaseStartedId);
      if (attempt) attempt.willBeRetried = envelope.testCaseFinished.willBeRetried;
    }
  }

  /** The report: one entry per feature file, in the order their first scenario started. */
  report(): JsonFeature[] {
    const byUri = new Map<string, { pickle: Pickle; testCase: TestCase; attempt: Attempt }[]>();
    for (const attempt of this.attempts.values()) {
      if (attempt.willBeRetried) continue;
      const testCase = this.testCases.get(attempt.testCaseId);
      const pickle = testCase && this.pickles.get(testCase.pickleId);
      if (!testCase || !pickle || !this.documents.get(pickle.uri)?.feature) continue;
      let group = byUri.get(pickle.uri);
      if (!group) byUri.set(pickle.uri, (group = []));
      group.push({ pickle, testCase, attempt });
    }
    return [...byUri].map(([uri, group]) => {
      const feature = this.documents.get(uri)!.feature!;
      const index = indexFeature(feature);
      const elements = group.map(({ pickle, testCase, attempt }) => this.scenario(feature, index, pickle, testCase, attempt));
      return {
        description: feature.description,
        elements,
        id: nameToId(feature.name),
        line: feature.location.line,
        keyword: feature.keyword,
        name: feature.name,
        tags: feature.tags.map((tag) => ({ name: tag.name, line: tag.location.line })),
        uri,
      };
    });
  }

  private scenario(feature: Feature, index: FeatureIndex, pickle: Pickle, testCase: TestCase, attempt: Attempt): JsonScenario {
    const scenario = index.scenarios.get(pickle.astNodeIds[0]);
    const description = pickle.astNodeIds.map((id) => index.scenarios.get(id)).find((s) => s != null)?.description ?? '';
    const rule = index.rules.get(pickle.astNodeIds[0]);
    const lastNode = pickle.astNodeIds[pickle.astNodeIds.length - 1];
    let beforeFirstStep = true;
    const steps = testCase.testSteps.map((testStep) => {
      beforeFirstStep = beforeFirstStep && testStep.pickleStepId === undefined;
      return this.step(index, pickle, testStep, beforeFirstStep, attempt);
    });
    return {
      description,
      id: (rule ? [feature.name, rule.name, pickle.name] : [feature.name, pickle.name]).map(nameToId).join(';'),
      keyword: scenario?.keyword ?? '',
      line: index.locations.get(lastNode)?.line ?? 0,
      name: pickle.name,
      steps,
      tags: pickle.tags.map((tag) => ({ name: tag.name, line: findTag(tag.astNodeId, feature, scenario)?.location.line })),
      type: 'scenario',
    };
  }

  private step(index: FeatureIndex, pickle: Pickle, testStep: TestStep, isBeforeHook: boolean, attempt: Attempt): JsonStep {
    const result = attempt.results.get(testStep.id) ?? { duration: { seconds: 0, nanos: 0 }, status: TestStepResultStatus.UNKNOWN };
    const data: JsonStep = { result: { status: result.status.toLowerCase() } } as JsonStep;
    if (testStep.pickleStepId !== undefined) {
      const pickleStep = pickle.steps.find((s) => s.id === testStep.pickleStepId);
      const gherkinStep = pickleStep && index.steps.get(pickleStep.astNodeIds[0]);
      const keywordStep = pickleStep?.astNodeIds.map((id) => index.steps.get(id)).find((s) => s != null);
      data.arguments = stepArguments(pickleStep?.argument, gherkinStep);
      data.keyword = keywordStep?.keyword ?? '';
      data.line = gherkinStep?.location.line;
      data.name = pickleStep?.text;
    } else {
      data.keyword = isBeforeHook ? 'Before' : 'After';
      data.hidden = true;
    }
    if (testStep.stepDefinitionIds?.length === 1) {
      const reference = this.stepDefinitions.get(testStep.stepDefinitionIds[0]);
      if (reference) data.match = { location: formatLocation(reference) };
    }
    if (result.duration) data.result.duration = Math.floor(result.duration.seconds * NANOS_IN_SECOND + result.duration.nanos);
    if (result.status === TestStepResultStatus.FAILED && result.message != null) data.result.error_message = result.message;
    const attachments = attempt.attachments.get(testStep.id);
    if (attachments?.length) {
      data.embeddings = attachments.map((attachment) => ({
        data: attachment.contentEncoding === AttachmentContentEncoding.IDENTITY ? Buffer.from(attachment.body).toString('base64') : attachment.body,
        mime_type: attachment.mediaType,
      }));
    }
    return data;
  }
}

interface FeatureIndex {
  steps: Map<string, Step>;
  scenarios: Map<string, Scenario>;
  rules: Map<string, Rule>;
  /** Scenarios' and example rows' locations by node id: an outline's pickle is located at its example row. */
  locations: Map<string, Location>;
}

function indexFeature(feature: Feature): FeatureIndex {
  const index: FeatureIndex = { steps: new Map(), scenarios: new Map(), rules: new Map(), locations: new Map() };
  const addScenario = (scenario: Scenario, rule?: Rule) => {
    index.scenarios.set(scenario.id, scenario);
    index.locations.set(scenario.id, scenario.location);
    if (rule) index.rules.set(scenario.id, rule);
    for (const step of scenario.steps) index.steps.set(step.id, step);
    for (const examples of scenario.examples) for (const row of examples.tableBody) index.locations.set(row.id, row.location);
  };
  for (const child of feature.children) {
    if (child.background) for (const step of child.background.steps) index.steps.set(step.id, step);
    if (child.scenario) addScenario(child.scenario);
    if (child.rule) {
      for (const ruleChild of child.rule.children) {
        if (ruleChild.background) for (const step of ruleChild.background.steps) index.steps.set(step.id, step);
        if (ruleChild.scenario) addScenario(ruleChild.scenario, child.rule);
      }
    }
  }
  return index;
}

function findTag(astNodeId: string, feature: Feature, scenario: Scenario | undefined): Tag | undefined {
  const match = (tag: Tag) => tag.id === astNodeId;
  return feature.tags.find(match) ?? scenario?.tags.find(match) ?? scenario?.examples.flatMap((e) => e.tags).find(match);
}

/** A step's data table and doc string, in source order when the argument says it (data table first otherwise). */
function stepArguments(argument: PickleStepArgument | undefined, gherkinStep: Step | undefined): JsonArgument[] {
  type Indexed = { argumentIndex?: number };
  const parts = [argument?.dataTable, argument?.docString].filter((part) => !!part) as (NonNullable<PickleStepArgument['dataTable']> | NonNullable<PickleStepArgument['docString']>)[];
  parts.sort((a, b) => ((a as Indexed).argumentIndex ?? Number.MAX_SAFE_INTEGER) - ((b as Indexed).argumentIndex ?? Number.MAX_SAFE_INTEGER));
  return parts.map((part) =>
    'rows' in part
      ? { rows: part.rows.map((row) => ({ cells: row.cells.map((cell) => cell.value) })) }
      : { content: part.content, line: gherkinStep?.docString?.location.line ?? 0 });
}

function formatLocation(reference: SourceReference): string {
  const uri = reference.uri ?? '';
  return reference.location ? `${uri}:${reference.location.line}` : uri;
}

function nameToId(name: string): string {
  return name.replace(/ /g, '-').toLowerCase();
}
