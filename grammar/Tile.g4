// Tile.g4: the grammar of the tile language (ANTLR 4).
// Only syntax lives here; names, types and shapes are checked by compiler/frontend/sema.
// Element type names (f16, i32, ...) are plain identifiers, resolved like any other name,
// so a compile-time `type` parameter and a built-in type are written the same way.
grammar Tile;

file : topDecl* EOF ;

topDecl
    : importDecl
    | kernelDecl
    | funcDecl
    | exportDecl
    ;

importDecl : 'import' STRING ';' ;

kernelDecl
    : 'kernel' name=ID templateParams? '(' paramList? ')' launchClause* block
    ;

templateParams : '<' templateParam (',' templateParam)* '>' ;
// kind is `int`, `bool` or `type`; checked by the AST builder so `bool` stays a type name.
templateParam  : name=ID ':' kind=ID ('=' templateValue)? ;
// Defaults and export arguments stop before '>' so `<N: int = 4>` parses; write
// anything with comparisons in parentheses.
templateValue  : unaryExpr ;

paramList : param (',' param)* ','? ;
param     : name=ID ':' access=('out' | 'inout')? typeSpec ;
typeSpec  : elem=ID ('[' exprList ']')? stridesSpec? ;
stridesSpec : 'strides' '(' exprList ')' ;

launchClause
    : 'grid' '(' exprList ')'       # gridClause
    | 'threads' '(' expr ')'        # threadsClause
    ;

funcDecl : 'func' name=ID '(' funcParamList? ')' block ;
funcParamList : funcParam (',' funcParam)* ','? ;
funcParam : name=ID (':' typeSpec)? ;

exportDecl : 'export' kernel=ID ('<' exportArg (',' exportArg)* '>')? 'as' symbol=ID ';' ;
exportArg  : name=ID '=' templateValue ;

block : '{' stmt* '}' ;

stmt
    : block                                                   # blockStmt
    | 'let' name=ID (':' typeSpec)? '=' expr ';'              # letStmt
    | 'var' name=ID ':' typeSpec ('=' expr)? ';'              # varStmt
    | scope=('shared' | 'fragment' | 'local') name=ID ':' typeSpec ';'   # bufferStmt
    | 'for' ID (',' ID)* 'in' loop=ID '(' argList? ')' block  # forStmt
    | 'if' expr block ('else' (ifElse=stmt))?                 # ifStmt
    | 'return' expr? ';'                                      # returnStmt
    | 'break' ';'                                             # breakStmt
    | 'continue' ';'                                          # continueStmt
    | '@' name=ID ('(' argList? ')')? ';'?                    # annotationStmt
    // One alternative for assignments and calls keeps prediction to one token, so a
    // missing ';' is reported where it is missing. The builder checks the target.
    | target=expr (op=assignOp value=expr)? ';'               # exprStmt
    | ';'                                                     # emptyStmt
    ;

assignOp : '=' | '+=' | '-=' | '*=' | '/=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>=' ;

argList : arg (',' arg)* ','? ;
arg     : (name=ID '=')? expr ;
exprList : expr (',' expr)* ','? ;

expr : ternaryExpr ;

ternaryExpr : cond=orExpr ('?' then=expr ':' otherwise=ternaryExpr)? ;
orExpr     : andExpr ('||' andExpr)* ;
andExpr    : bitOrExpr ('&&' bitOrExpr)* ;
bitOrExpr  : bitXorExpr ('|' bitXorExpr)* ;
bitXorExpr : bitAndExpr ('^' bitAndExpr)* ;
bitAndExpr : eqExpr ('&' eqExpr)* ;
eqExpr     : relExpr (op+=('==' | '!=') relExpr)* ;
relExpr    : shiftExpr (op+=('<' | '<=' | '>' | '>=') shiftExpr)* ;
shiftExpr  : addExpr (shiftOp addExpr)* ;
shiftOp    : '<<' | '>' '>' ;
addExpr    : mulExpr (op+=('+' | '-') mulExpr)* ;
mulExpr    : unaryExpr (op+=('*' | '/' | '%') unaryExpr)* ;
unaryExpr
    : op=('-' | '+' | '!' | '~') unaryExpr
    | postfixExpr
    ;
postfixExpr
    : primary                                   # primaryPostfix
    | postfixExpr '[' exprList ']'              # indexPostfix
    | postfixExpr '(' argList? ')'              # callPostfix
    | postfixExpr '.' member=ID                 # memberPostfix
    ;
primary
    : INT                                       # intLiteral
    | FLOAT                                     # floatLiteral
    | ('true' | 'false')                        # boolLiteral
    | 'inf'                                     # infLiteral
    | STRING                                    # stringLiteral
    | 'cast' '<' typeSpec '>' '(' expr ')'      # castExpr
    | ID                                        # nameExpr
    | '(' expr ')'                              # parenExpr
    ;

INT    : [0-9]+ | '0x' [0-9a-fA-F]+ | '0b' [01]+ ;
FLOAT  : [0-9]+ '.' [0-9]* EXPONENT? | '.' [0-9]+ EXPONENT? | [0-9]+ EXPONENT ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;
STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;
// A string with no closing quote runs to the end of the line, so the rest of the line
// does not produce follow-on errors; the parser reports it once.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' .)* ;
ID     : [a-zA-Z_] [a-zA-Z_0-9]* ;

LINE_COMMENT  : '//' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
WS : [ \t\r\n]+ -> skip ;
// Any other character becomes a token the parser rejects with a located message.
UNKNOWN_CHAR : . ;
