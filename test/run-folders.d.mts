/** Types of test/run-folders.mjs (the run's setup and teardown load the module itself). */
export declare const TEST_DATA_ROOT: string;
export declare function runFolderPrefix(run: number | string): string;
export declare function removeRunFolders(whose: (run: number) => boolean): void;
