<?php
// Generates golden.jsonl, the PHP reference for the phpjson Go tests.
//
// Regenerate from the repository root with PHP 8.2 (default ini, so
// serialize_precision = -1):
//
//     php internal/phpjson/testdata/gen_golden.php > internal/phpjson/testdata/golden.jsonl
//
// Every line is one case, itself written by json_encode (so it is plain
// ASCII). Byte strings are stored base64 so their exact bytes, including
// invalid UTF-8 and NUL, survive any editor or tool:
//
//   {"op": OP, "name": NAME, "in": INPUT, "out": BASE64 | null, "err": MSG}
//
// op "decode"     in = base64 JSON text;  out = json_encode(json_decode(in, true))
//                 "stage" tells where PHP failed when out is null
//                 ("decode" or "encode").
// op "float"      in = 16 hex digits, the IEEE-754 bits; out = json_encode(float)
// op "int"        in = decimal string;     out = json_encode(int)
// op "string"     in = base64 bytes;       out = json_encode(string)
// op "substitute" in = base64 bytes;       out = json_encode(string, JSON_INVALID_UTF8_SUBSTITUTE)
// op "nest"       in = N;                  out = json_encode of N nested empty arrays
//
// Random cases use a fixed mt_rand seed, so the output is reproducible.

declare(strict_types=1);

if (PHP_VERSION_ID < 80200 || PHP_VERSION_ID >= 80300) {
    fwrite(STDERR, "warning: golden data is meant to come from PHP 8.2, this is " . PHP_VERSION . "\n");
}
if (ini_get('serialize_precision') !== '-1') {
    fwrite(STDERR, "serialize_precision must be -1 (PHP's default)\n");
    exit(1);
}

mt_srand(20260601);

function emit(array $case): void
{
    echo json_encode($case, JSON_THROW_ON_ERROR), "\n";
}

function result(string|false $out): ?string
{
    return $out === false ? null : base64_encode($out);
}

function decode_case(string $name, string $in): void
{
    $v = json_decode($in, true);
    if (json_last_error() !== JSON_ERROR_NONE) {
        emit(['op' => 'decode', 'name' => $name, 'in' => base64_encode($in), 'out' => null, 'stage' => 'decode', 'err' => json_last_error_msg()]);
        return;
    }
    $out = json_encode($v);
    emit(['op' => 'decode', 'name' => $name, 'in' => base64_encode($in), 'out' => result($out), 'stage' => $out === false ? 'encode' : '', 'err' => json_last_error_msg()]);
}

function float_case(string $name, float $f): void
{
    $out = json_encode($f);
    emit(['op' => 'float', 'name' => $name, 'in' => bin2hex(pack('E', $f)), 'out' => result($out), 'err' => json_last_error_msg()]);
}

function float_bits_case(string $name, string $hex): void
{
    $f = unpack('E', hex2bin($hex))[1];
    $out = json_encode($f);
    emit(['op' => 'float', 'name' => $name, 'in' => $hex, 'out' => result($out), 'err' => json_last_error_msg()]);
}

function int_case(string $name, int $n): void
{
    emit(['op' => 'int', 'name' => $name, 'in' => (string)$n, 'out' => result(json_encode($n)), 'err' => json_last_error_msg()]);
}

function string_case(string $name, string $s): void
{
    emit(['op' => 'string', 'name' => $name, 'in' => base64_encode($s), 'out' => result(json_encode($s)), 'err' => json_last_error_msg()]);
    emit(['op' => 'substitute', 'name' => $name, 'in' => base64_encode($s), 'out' => result(json_encode($s, JSON_INVALID_UTF8_SUBSTITUTE)), 'err' => json_last_error_msg()]);
}

function rand_bytes(int $n, array $alphabet): string
{
    $s = '';
    for ($i = 0; $i < $n; $i++) {
        $s .= $alphabet[mt_rand(0, count($alphabet) - 1)];
    }
    return $s;
}

// --- Hand-picked JSON documents -------------------------------------------

$docs = [
    'recorded plugin payload' => '{"text":"h\u00e9llo \u2713 \ud83d\ude00","path":"a\/b\\\\c","html":"<a href=\'x\'>&<\/a>","one":1,"tenth":0.1,"big":9007199254740993,"neg":-5,"empty":[],"list":[1,2],"map":{"k":null,"t":true},"nested":{"e":[]}}',
    'null' => 'null', 'true' => 'true', 'false' => 'false',
    'TRUE' => 'TRUE', 'True' => 'True', 'nul' => 'nul', 'truex' => 'truex',
    'empty input' => '', 'only space' => ' ', 'nul byte' => "\0", 'trailing nul' => "1\0",
    'empty list' => '[]', 'empty object' => '{}', 'list of empty object' => '[{}]',
    'nested empties' => '{"a":{},"b":[],"c":[[],{}]}',
    'whitespace' => " \t\n\r[ 1 ,\n2\t]\r\n ", 'form feed' => "[1,\f2]", 'vertical tab' => "[1,\v2]",
    'nbsp' => "[1,\u{a0}2]", 'bom' => "\u{feff}1",
    'list keys' => '{"0":"a","1":"b"}', 'list keys 3' => '{"0":1,"1":2,"2":3}',
    'reversed keys' => '{"1":"a","0":"b"}', 'hole' => '{"0":"a","2":"b"}', 'starts at 1' => '{"1":1}',
    'key 01' => '{"01":"a"}', 'key -1' => '{"-1":"a"}', 'key -0' => '{"-0":"a"}', 'key +1' => '{"+1":"a"}',
    'key 1.0' => '{"0":"a","1.0":"b"}', 'key space 1' => '{"0":"a"," 1":"b"}',
    'key 0 then 01' => '{"0":"a","01":"b"}',
    'key int max' => '{"9223372036854775807":1}', 'key int max+1' => '{"9223372036854775808":1}',
    'key int min' => '{"-9223372036854775808":1}', 'key int min-1' => '{"-9223372036854775809":1}',
    'mixed keys' => '{"0":"a","x":"b","1":"c"}',
    'duplicate keys' => '{"a":1,"b":2,"a":3}', 'duplicate 0' => '{"0":1,"0":2}',
    'duplicate makes list' => '{"0":1,"1":2,"0":3}', 'escaped duplicate' => '{"a":1,"\u0061":2}',
    'empty key' => '{"":1}', 'nul key' => '{"\u0000a":1}', 'slash key' => '{"a/b":1}',
    'unicode key' => '{"\u00e9":1,"é":2}',
    'int' => '123', 'minus zero' => '-0', 'minus zero float' => '-0.0', 'minus zero exp' => '-0.0e0',
    'zero exp' => '0e0', '1E2' => '1E2', '1e+2' => '1e+2', '1.0' => '1.0', '0.1e1' => '0.1e1',
    'int max' => '9223372036854775807', 'int max+1' => '9223372036854775808',
    'int min' => '-9223372036854775808', 'int min-1' => '-9223372036854775809',
    '2^53+1' => '9007199254740993', '2^53+1 as float' => '9007199254740993.0',
    'long int' => '123456789012345678901234567890', '1e400' => '1e400', '-1e400' => '-1e400',
    '1e-400' => '1e-400', '-1e-400' => '-1e-400', '4.9e-324' => '4.9e-324', '2e-324' => '2e-324',
    '2.5e-324' => '2.5e-324', '1.5e300' => '1.5e300', '1e-7' => '1e-7',
    'max float' => '1.7976931348623157e308', 'max float+' => '1.7976931348623158e308',
    'overflow edge' => '1.797693134862315807e308', 'float list' => '[1.0,0.1,1e25,1e16,1e17,0.0001,0.00001,-0.0,1e15,123456789012345678.0]',
    'many digits' => '0.1000000000000000055511151231257827021181583404541015625',
    'halfway' => '9007199254740993.0000000000000000000000000000000000001',
    'leading zero' => '01', 'neg leading zero' => '-01', 'list leading zero' => '[01]', 'hex' => '0x10',
    'dot only' => '1.', 'leading dot' => '.5', 'bare e' => '1e', 'e plus' => '1e+', 'minus' => '-',
    'plus' => '+1', 'NaN' => 'NaN', 'Infinity' => 'Infinity', 'double minus' => '--1',
    'trailing comma list' => '[1,]', 'trailing comma object' => '{"a":1,}', 'missing value' => '{"a":}',
    'missing colon' => '{"a"}', 'bare key' => '{a:1}', 'int key' => '{1:2}', 'empty pair' => '{,}',
    'unclosed list' => '[', 'unclosed object' => '{"a":1', 'unclosed string' => '"abc', 'two values' => '1 2',
    'single quotes' => "'a'", 'comment' => '[1/*x*/]',
    'escapes' => '"\"\\\\\/\b\f\n\r\t"', 'unicode escapes' => '"\u0041\u00e9\u2713\uffff\ufeff"',
    'upper hex escape' => '"\u00E9\u00e9"', 'escaped nul' => '"a\u0000b"', 'escaped 7f' => '"\u007f"',
    'surrogate pair' => '"\ud83d\ude00"', 'max pair' => '"\uDBFF\uDFFF"', 'lone high' => '"\ud800"',
    'lone low' => '"\udc00"', 'swapped pair' => '"\udc00\ud800"', 'high then ascii' => '"\uD83D\u0041"',
    'high then text' => '"\uD83Dx"', 'short escape' => '"\u12"', 'upper U' => '"\U0041"', 'bad escape' => '"\x"',
    'escaped quote end' => '"\"', 'raw tab' => "\"\t\"", 'raw newline' => "\"\n\"", 'raw 1f' => "\"a\x1fb\"",
    'raw 7f' => "\"\x7f\"", 'raw utf8' => "\"h\u{e9}llo \u{2713} \u{1F600}\"", 'raw u2028' => "\"\u{2028}\u{2029}\"",
    'raw ffff' => "\"\u{ffff}\"", 'html' => '"<a href=\'x\'>&amp;</a>"',
    'invalid utf8' => "\"\xff\"", 'truncated utf8' => "\"\xc3\"", 'overlong' => "\"\xc0\xaf\"",
    'encoded surrogate' => "\"\xed\xa0\x80\"", 'above max' => "\"\xf4\x90\x80\x80\"",
    'invalid utf8 key' => "{\"\xff\":1}", 'invalid utf8 after escape' => "\"\\n\xff\"",
    'deep 511 lists' => str_repeat('[', 511) . str_repeat(']', 511),
    'deep 512 lists' => str_repeat('[', 512) . str_repeat(']', 512),
    'deep 511 objects' => str_repeat('{"a":', 511) . '1' . str_repeat('}', 511),
    'deep 512 objects' => str_repeat('{"a":', 512) . '1' . str_repeat('}', 512),
    'deep 510 + scalar' => str_repeat('[', 510) . '1' . str_repeat(']', 510),
];
foreach ($docs as $name => $doc) {
    decode_case((string)$name, $doc);
}

// Random number literals: checks that Go reads them as zend_strtod does
// (including int/float typing) and formats the result like PHP.
for ($i = 0; $i < 400; $i++) {
    $lit = (mt_rand(0, 3) === 0 ? '-' : '');
    $int = rand_bytes(mt_rand(1, 22), str_split('0123456789'));
    $lit .= ltrim($int, '0') === '' ? '0' : ltrim($int, '0');
    if (mt_rand(0, 2) > 0) {
        $lit .= '.' . rand_bytes(mt_rand(1, 20), str_split('0123456789'));
    }
    if (mt_rand(0, 2) > 0) {
        $lit .= ['e', 'E', 'e+', 'e-', 'E-'][mt_rand(0, 4)] . mt_rand(0, mt_rand(0, 1) ? 30 : 330);
    }
    decode_case("random literal $i", $lit);
}

// Random single-byte mutations of a valid document: checks that Go accepts
// and rejects exactly what PHP does.
$base = '{"a":[1,-2.5e3,true,false,null],"b":{"0":"x","1":"y"},"c":"h\u00e9\/\"q","d":{}}';
$noise = str_split("{}[]:,\"\\/ \t\n-+.eE019aftnulr\x00\x1f\x7f\x80\xc3\xff");
for ($i = 0; $i < 500; $i++) {
    $doc = $base;
    for ($k = mt_rand(1, 2); $k > 0; $k--) {
        $p = mt_rand(0, strlen($doc) - 1);
        $c = $noise[mt_rand(0, count($noise) - 1)];
        switch (mt_rand(0, 2)) {
            case 0: $doc = substr($doc, 0, $p) . $c . substr($doc, $p + 1); break; // replace
            case 1: $doc = substr($doc, 0, $p) . $c . substr($doc, $p); break;     // insert
            default: $doc = substr($doc, 0, $p) . substr($doc, $p + 1);            // delete
        }
    }
    decode_case("mutation $i", $doc);
}

// --- Floats built in PHP ----------------------------------------------------

$floats = [
    '1.0' => 1.0, '0.1' => 0.1, '0.5' => 0.5, '1.5' => 1.5, '10.0' => 10.0, '-1.5' => -1.5,
    '0.0' => 0.0, '-0.0' => -0.0, '1e15' => 1e15, '1e16' => 1e16, '1e17' => 1e17, '1e25' => 1e25,
    '1e21' => 1e21, '1e22' => 1e22, '99999999999999999.0' => 99999999999999999.0,
    '123456789012345678.0' => 123456789012345678.0, '2^53' => 9007199254740992.0,
    '2^53+1 as float' => (float)9007199254740993, '0.0001' => 0.0001, '0.00001' => 0.00001,
    '9.9e-5' => 9.9e-5, '2.5e-5' => 2.5e-5, '1.5e-7' => 1.5e-7, '1.2345e20' => 1.2345e20,
    '1e300' => 1e300, '5e-324' => 5e-324, 'min normal' => 2.2250738585072014e-308,
    'max' => PHP_FLOAT_MAX, 'epsilon' => PHP_FLOAT_EPSILON, '0.30000000000000004' => 0.1 + 0.2,
    '1/3' => 1 / 3, '2/3' => 2 / 3, 'pi' => M_PI, '-1.5e-10' => -1.5e-10, '123e18' => 123e18,
    '1e-4 - ulp' => 0.00009999999999999999, '1e17 - ulp' => 99999999999999984.0,
    '12345.678' => 12345.678, '100.0' => 100.0, '1e100' => 1e100,
    'INF' => INF, '-INF' => -INF, 'NAN' => NAN,
];
foreach ($floats as $name => $f) {
    float_case((string)$name, $f);
}
for ($i = 0; $i < 800; $i++) {
    // Random bit patterns cover every exponent evenly.
    float_bits_case("random bits $i", rand_bytes(16, str_split('0123456789abcdef')));
}
for ($i = 0; $i < 400; $i++) {
    // Short decimals near the plain/exponent switch points.
    $f = (float)(mt_rand(1, 99999) . 'e' . mt_rand(-12, 22));
    float_case("random short $i", mt_rand(0, 1) ? $f : -$f);
}
for ($i = 0; $i < 150; $i++) {
    // Integral floats around 2^53..2^64.
    $f = (float)mt_rand() * (float)mt_rand() * (float)mt_rand(1, 1 << 12);
    float_case("random integral $i", $f);
}

// --- Ints --------------------------------------------------------------------

foreach (['0' => 0, '-1' => -1, '42' => 42, 'PHP_INT_MAX' => PHP_INT_MAX, 'PHP_INT_MIN' => PHP_INT_MIN,
             '123456789012345678' => 123456789012345678, '2^53+1' => 9007199254740993] as $name => $n) {
    int_case((string)$name, $n);
}

// --- Strings -------------------------------------------------------------------

$strings = [
    'empty' => '', 'ascii' => 'hello world', 'slash' => 'a/b', 'backslash' => 'a\\b', 'quote' => 'say "hi"',
    'html' => "<a href='x'>&</a>", 'controls' => "\x00\x01\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f", 'del' => "a\x7fb",
    'latin' => "h\u{e9}llo", 'check' => "\u{2713}", 'emoji' => "\u{1F600}", 'max rune' => "\u{10FFFF}",
    'u2028' => "\u{2028}\u{2029}", 'bom' => "\u{feff}", 'fffd' => "\u{fffd}", 'ffff' => "\u{ffff}",
    'nbsp' => "\u{a0}", 'cjk' => "\u{4e2d}\u{6587}",
    'invalid ff' => "\xff", 'lone continuation' => "a\x80b", 'truncated 2' => "\xc3", 'truncated 3' => "\xe2\x82",
    'truncated 3 then A' => "\xe2\x82A", 'truncated 4' => "\xf0\x9f\x98", 'truncated 4 then A' => "\xf0\x9f\x98A",
    'overlong 2' => "\xc0\xaf", 'overlong 3' => "\xe0\x80\x80", 'overlong 4' => "\xf0\x80\x80\x80",
    'surrogate' => "\xed\xa0\x80", 'above max' => "\xf4\x90\x80\x80", 'f5' => "\xf5\x80\x80\x80",
    'lead then ff' => "\xc3\xff", 'e2 ff 80' => "\xe2\xff\x80", 'e2 ff' => "\xe2\xff", 'f0 ff 80 41' => "\xf0\xff\x80A",
    'f0 80 ff' => "\xf0\x9f\xff", 'latin1' => "caf\xe9",
];
foreach ($strings as $name => $s) {
    string_case((string)$name, $s);
}
$alphabet = array_merge(
    str_split("ab/\\\"<>&' \x00\x1f\x7f\n"),
    ["\u{e9}", "\u{2713}", "\u{1F600}", "\u{2028}", "\u{10FFFF}"],
    array_map('chr', range(0x80, 0xff, 3)),
    ["\xc3", "\xe2", "\xf0", "\xf4", "\x80", "\xbf"],
);
for ($i = 0; $i < 300; $i++) {
    string_case("random bytes $i", rand_bytes(mt_rand(0, 12), $alphabet));
}

// --- Nesting depth of json_encode ---------------------------------------------

foreach ([1, 2, 511, 512, 513] as $n) {
    $v = [];
    for ($k = 1; $k < $n; $k++) {
        $v = [$v];
    }
    $out = json_encode($v);
    emit(['op' => 'nest', 'name' => "$n nested arrays", 'in' => (string)$n, 'out' => result($out), 'err' => json_last_error_msg()]);
}
