/**
 * The play package formats the catalog publishes: the spec's "one of v1, v2", the enum of our own
 * `catalog.course_version.published` v1 schema (a unit test keeps the two equal). A format beyond
 * these is held until a release teaches the catalog (and the schema) the new value.
 */
export const PLAY_PACKAGE_FORMATS: readonly string[] = ['v1', 'v2'];
