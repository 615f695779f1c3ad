/** Types of test/sequencer.mjs (the jest configuration loads the module itself). */
export declare const LONGEST: readonly string[];
