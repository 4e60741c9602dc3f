import fc from 'fast-check';
import { COURSE_IDS, VERSION_IDS, type Change } from './cache-model.js';

/**
 * Random read documents over the catalog model (cache-model.ts) for the response cache's
 * generative tests: aliases, named and inline fragments, @skip/@include with literals and
 * variables, __typename, nested lists and entity paths (version → course → versions …). Built from
 * a stream of choices fast-check draws and shrinks, so a failure shrinks to a short document.
 */

type FieldSpec = readonly [name: string, type: string | null];
const FIELDS: Readonly<Record<string, readonly FieldSpec[]>> = {
  Course: [
    ['courseId', null],
    ['slug', null],
    ['title', null],
    ['authors', 'CourseAuthor'],
    ['versions', 'CourseVersion'],
    ['latestVersionLabel', null],
  ],
  CourseAuthor: [
    ['userId', null],
    ['displayName', null],
  ],
  CourseVersion: [
    ['courseVersionId', null],
    ['courseId', null],
    ['versionLabel', null],
    ['publishedBy', null],
    ['state', null],
    ['course', 'Course'],
    ['course', 'Course'],
  ],
  CourseConnection: [
    ['edges', 'CourseEdge'],
    ['count', null],
  ],
  CourseEdge: [
    ['cursor', null],
    ['node', 'Course'],
  ],
};

const ID_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Course: ['courseId'],
  CourseVersion: ['courseVersionId', 'courseId'],
};

export interface GeneratedRead {
  query: string;
  variables: Record<string, unknown>;
}

/**
 * Draws numbers from fast-check's choices; past their end every choice is the plainest one (the
 * first option, no alias, no directive), so a shrunk stream gives a short plain document.
 */
class Choices {
  private at = 0;
  constructor(private readonly values: readonly number[]) {}
  pick(n: number): number {
    return n <= 1 ? 0 : (this.values[this.at++] ?? 0) % n;
  }
  chance(percent: number): boolean {
    const value = this.values[this.at++];
    return value !== undefined && value % 100 < percent;
  }
}

class Builder {
  private readonly fragments: string[] = [];
  private readonly declared = new Map<string, string>();
  readonly variables: Record<string, unknown> = {};
  private counter = 0;

  constructor(private readonly choices: Choices) {}

  build(): GeneratedRead {
    const roots = 1 + this.choices.pick(2);
    const selections: string[] = [];
    for (let i = 0; i < roots; i++) selections.push(this.root(i));
    const declarations = [...this.declared].map(([name, type]) => `$${name}: ${type}`).join(', ');
    const head = declarations ? `query Read(${declarations})` : 'query Read';
    return { query: [`${head} { ${selections.join(' ')} }`, ...this.fragments].join('\n'), variables: this.variables };
  }

  private root(i: number): string {
    const alias = `r${i}: `;
    // Weighted towards a version with its course inside: an entity no argument names.
    switch ([0, 1, 1, 2, 3][this.choices.pick(5)]) {
      case 0:
        return `${alias}course(courseId: ${this.idArgument('courseId', 'ID!', COURSE_IDS)})${this.directive()} ${this.selection('Course', 0)}`;
      case 1:
        return `${alias}courseVersion(courseVersionId: ${this.idArgument('versionId', 'ID!', VERSION_IDS)})${this.directive()} ${this.selection('CourseVersion', 0)}`;
      case 2:
        return `${alias}courses(first: 10)${this.directive()} ${this.selection('CourseConnection', 0)}`;
      default:
        return `${alias}courseVersions(courseId: ${this.idArgument('courseId', 'ID!', COURSE_IDS)})${this.directive()} ${this.selection('CourseVersion', 0)}`;
    }
  }

  /** An id as a literal or a variable. */
  private idArgument(name: string, type: string, ids: readonly string[]): string {
    const id = ids[this.choices.pick(ids.length)];
    if (this.choices.chance(50)) return JSON.stringify(id);
    const variable = `${name}${this.counter++}`;
    this.declared.set(variable, type);
    this.variables[variable] = id;
    return `$${variable}`;
  }

  /** Nothing, or @skip / @include with a literal or a variable (either value). */
  private directive(percent = 35): string {
    if (!this.choices.chance(percent)) return '';
    const name = this.choices.chance(50) ? 'skip' : 'include';
    const value = this.choices.chance(50);
    if (this.choices.chance(50)) return ` @${name}(if: ${value})`;
    const variable = `b${this.counter++}`;
    this.declared.set(variable, 'Boolean!');
    this.variables[variable] = value;
    return ` @${name}(if: $${variable})`;
  }

  private selection(type: string, depth: number): string {
    const count = 1 + this.choices.pick(4);
    const parts: string[] = [];
    // Clients mostly select the ids (what the cache names entries by), often under a directive.
    if (this.choices.chance(60)) {
      for (const id of ID_FIELDS[type] ?? []) parts.push(`${id}${this.directive(50)}`);
    }
    for (let i = 0; i < count; i++) parts.push(this.part(type, depth));
    return `{ ${parts.join(' ')} }`;
  }

  /** One selection: a field, __typename, or a fragment (inline or named) of more. */
  private part(type: string, depth: number): string {
    const kind = this.choices.pick(10);
    if (kind === 9) return `__typename${this.directive()}`;
    if (kind === 8 && depth < 4)
      return `...${this.choices.chance(50) ? ` on ${type}` : ''}${this.directive()} ${this.selection(type, depth + 1)}`;
    if (kind === 7 && depth < 4) {
      const name = `F${this.counter++}`;
      // Built before it is pushed: a fragment's own fragments come first in the document.
      const body = this.selection(type, depth + 1);
      this.fragments.push(`fragment ${name} on ${type} ${body}`);
      return `...${name}${this.directive()}`;
    }
    return this.field(type, depth);
  }

  private field(type: string, depth: number): string {
    const fields = FIELDS[type];
    let [name, target] = fields[this.choices.pick(fields.length)];
    if (target && depth >= 4) [name, target] = fields.find(([, t]) => t === null)!;
    // Aliases are unique, so fields of one response key never conflict.
    const alias = this.alias();
    const sub = target ? ` ${this.selection(target, depth + 1)}` : '';
    return `${alias}${name}${this.directive()}${sub}`;
  }

  private alias(): string {
    return this.choices.chance(25) ? `a${this.counter++}: ` : '';
  }
}

/** A random read document with its variables. */
export const readArbitrary: fc.Arbitrary<GeneratedRead> = fc
  .array(fc.nat({ max: 9_999 }), { minLength: 20, maxLength: 300 })
  .map((values) => new Builder(new Choices(values)).build());

/** The cases measured on commit 6446199 (issue #33): an id under @skip/@include, by variable, literal, named fragment. */
export const MEASURED: Array<[GeneratedRead[], Change[]]> = [
  [
    [
      {
        query:
          'query Read($s: Boolean!) { r0: courseVersion(courseVersionId: "v1") { courseVersionId courseId @skip(if: $s) course { courseId @skip(if: $s) title } } }',
        variables: { s: true },
      },
    ],
    [{ kind: 'retitle', course: 0, title: 'New' }],
  ],
  [
    [
      {
        query:
          'query Read { r0: courseVersion(courseVersionId: "v3") { courseVersionId courseId @include(if: false) course { courseId @include(if: false) authors { displayName } } } }',
        variables: {},
      },
    ],
    [{ kind: 'renameAuthor', course: 1, name: 'erased' }],
  ],
  [
    [
      {
        query:
          'query Read($i: Boolean!) { r0: courseVersion(courseVersionId: "v2") { ...V } }\n' +
          'fragment V on CourseVersion { courseVersionId courseId @include(if: $i) course { ...C } }\n' +
          'fragment C on Course { courseId @include(if: $i) title }',
        variables: { i: false },
      },
    ],
    [{ kind: 'retitle', course: 0, title: 'New' }],
  ],
];
