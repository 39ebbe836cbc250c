// Input schemas as `toolhost tools --json` prints them (JSON Schema 2020-12).

export const editSchema: unknown = {
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The file to edit, relative to the workspace or absolute."
    },
    "old_string": {
      "type": "string",
      "description": "The exact text to replace."
    },
    "new_string": {
      "type": "string",
      "description": "The replacement text."
    },
    "replace_all": {
      "type": "boolean",
      "description": "Replace every occurrence instead of requiring exactly one."
    }
  },
  "required": [
    "file_path",
    "old_string",
    "new_string"
  ],
  "title": "EditArgs",
  "$schema": "https://json-schema.org/draft/2020-12/schema"
};

export const readSchema: unknown = {
  "type": "object",
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The file to read, relative to the workspace or absolute."
    },
    "offset": {
      "type": "number",
      "description": "The 1-based line to start at (default 1)."
    },
    "limit": {
      "type": "number",
      "description": "How many lines to read (default and maximum 2000)."
    }
  },
  "required": [
    "file_path"
  ],
  "title": "ReadArgs",
  "$schema": "https://json-schema.org/draft/2020-12/schema"
};
